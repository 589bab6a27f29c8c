#!/usr/bin/env bash
# What writes carry, against fio (issue 21): 4 KiB random buffered writes with psync into one
# page-cached 64 MiB file (the case where making the data costs most: nothing else does),
# stormark and fio alternating, ROUNDS rounds; prints IOPS, the ratio stormark/fio per case and
# stormark's compressible-and-dedupable data against its default.
#   default         fio's default (one buffer per I/O, scrambled: compresses 70x across writes)
#                   against stormark's (unique and incompressible: a 4 MiB pool)
#   incompressible  fio refill_buffers=1 (new random bytes every write) against the same
#   compress2-dedup1.5  fio buffer_compress_percentage=50 dedupe_percentage=33 (which turns
#                   on refill_buffers) against --compress-ratio 2 --dedup-ratio 1.5
# Targets: compress2-dedup1.5 >= 0.95x stormark's default and >= fio's.
# Usage: bench/data-vs-fio.sh   (env: BENCH_DIR, ROUNDS=3, RUNTIME=4, FIO, STORMARK, ONLY)
# Writes only inside $BENCH_DIR (default ./bench-data) and removes only what it created.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-4}
. bench/fio-side.sh
fio_side data
FILE=$OUT/file
head -c $((64 << 20)) /dev/urandom > "$FILE"

# name | fio options | stormark options
CASES=(
  "default||"
  "incompressible|--refill_buffers=1|"
  "compress2-dedup1.5|--buffer_compress_percentage=50 --dedupe_percentage=33|--compress-ratio 2 --dedup-ratio 1.5"
)
for round in $(seq 1 "$ROUNDS"); do
  for c in "${CASES[@]}"; do
    IFS='|' read -r name fio_opts sm_opts <<<"$c"
    case "$name" in "${ONLY:-}"*) ;; *) continue ;; esac
    order="fio sm"; [ $((round % 2)) = 0 ] && order="sm fio"
    for tool in $order; do
      cat "$FILE" >/dev/null
      if [ "$tool" = fio ]; then
        "$FIO" --name=bench --filename="$FILE" --size=64m --rw=randwrite --bs=4k --ioengine=psync \
          --direct=0 --invalidate=0 $fio_opts --time_based --runtime="$RUNTIME" --norandommap \
          --randrepeat=0 --output-format=json --output="$OUT/$name.$round.fio.json" >/dev/null
      else
        "$STORMARK" run "$FILE" --size 64m --rw randwrite --bs 4k --engine psync --buffered \
          --invalidate 0 --allow-overwrite $sm_opts --time "${RUNTIME}s" --quiet \
          --json "$OUT/$name.$round.sm.json" >/dev/null
      fi
    done
  done
done

python3 - "$OUT" "$ROUNDS" <<'PY'
import json, sys, statistics, glob, os
out, rounds = sys.argv[1], int(sys.argv[2])
names = [n for n in ["default", "incompressible", "compress2-dedup1.5"]
         if glob.glob(f"{out}/{n}.*.json")]
fio = lambda p: json.load(open(p))['jobs'][0]['write']['iops']
def sm(p):
    d = json.load(open(p)); ph = [x for x in d['phases'] if x['name'] == 'run'][0]
    return ph['by_op']['write']['iops']
med = {}
print(f"{'case':22} {'fio IOPS':>10} {'sm IOPS':>10} {'sm/fio':>7}   per round")
for n in names:
    f = [fio(f'{out}/{n}.{r}.fio.json') for r in range(1, rounds + 1)]
    s = [sm(f'{out}/{n}.{r}.sm.json') for r in range(1, rounds + 1)]
    med[n] = statistics.median(s)
    print(f"{n:22} {statistics.median(f):10.0f} {med[n]:10.0f} {med[n]/statistics.median(f):7.3f}   "
          + ' '.join(f'{b/a:.3f}' for a, b in zip(f, s)))
if 'default' in med and 'compress2-dedup1.5' in med:
    print(f"stormark compress2-dedup1.5 / default: {med['compress2-dedup1.5']/med['default']:.3f}")
PY
