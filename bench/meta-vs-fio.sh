#!/usr/bin/env bash
# stormark meta against fio's file engines (issue 21), on the same filesystem, alternating,
# ROUNDS rounds: N empty files in one directory from one worker, created (fio filecreate),
# statted (filestat) and deleted (filedelete). Prints the rate per round and the ratio
# stormark/fio of the medians. Target: each >= 1.0x.
# Usage: bench/meta-vs-fio.sh   (env: BENCH_DIR, ROUNDS=3, FILES=10000, FIO, STORMARK)
# Writes only inside $BENCH_DIR (default ./bench-data) and removes only what it created.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
FILES=${FILES:-10000}
. bench/fio-side.sh
fio_side meta
mkdir "$OUT/fio" "$OUT/sm"
fio_run() { # engine rw output
  "$FIO" --name=m --ioengine="$1" --directory="$OUT/fio" --nrfiles="$FILES" --filesize=4k \
    --bs=4k --rw="$2" --openfiles=1 --output-format=json --output="$3" >/dev/null
}
for round in $(seq 1 "$ROUNDS"); do
  order="fio sm"; [ $((round % 2)) = 0 ] && order="sm fio"
  for tool in $order; do
    if [ $tool = fio ]; then
      fio_run filecreate write "$OUT/create.$round.fio.json"
      fio_run filestat read "$OUT/stat.$round.fio.json"
      fio_run filedelete read "$OUT/delete.$round.fio.json"
      rm -rf "$OUT/fio"; mkdir "$OUT/fio"
    else
      "$STORMARK" meta "$OUT/sm" --jobs 1 --dirs 1 --files "$FILES" --ops create,stat,delete \
        -q --json "$OUT/$round.sm.json" 2>/dev/null
    fi
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, sys, statistics
out, rounds = sys.argv[1], int(sys.argv[2])
def fio(op, r):
    j = json.load(open(f'{out}/{op}.{r}.fio.json'))['jobs'][0]
    return j['write' if op == 'create' else 'read']['iops']
def sm(op, r):
    d = json.load(open(f'{out}/{r}.sm.json'))
    p = [p for p in d['phases'] if p['name'] == op][0]
    return p['by_op'][op]['iops']
print(f"{'op':8} {'fio ops/s':>10} {'sm ops/s':>10} {'sm/fio':>8}   per round (fio/sm)")
for op in ['create', 'stat', 'delete']:
    f = [fio(op, r) for r in range(1, rounds + 1)]
    s = [sm(op, r) for r in range(1, rounds + 1)]
    print(f"{op:8} {statistics.median(f):10.0f} {statistics.median(s):10.0f} "
          f"{statistics.median(s)/statistics.median(f):8.2f}   "
          + ' '.join(f'{a:.0f}/{b:.0f}' for a, b in zip(f, s)))
PY
