#!/usr/bin/env bash
# --verify against fio's verify=crc32c (issue 21), alternating, ROUNDS rounds, on one 256 MiB
# file each written by its own tool with 4 KiB blocks:
#   verify-warm   fio verify_only=1 against stormark --verify-only, the file in the page cache
#                 (what checking costs: reading, CRC-32C, the header)
#   verify-cold   the same with the page cache dropped first (invalidate=1, both tools'
#                 default): the disk's read rate with checking
#   write         4 KiB sequential writes with headers: fio verify=crc32c do_verify=0 against
#                 stormark --verify (its write figures; its pass after the load is apart)
# Prints MiB/s per round and the ratio stormark/fio of the medians. Target: verify >= 1.0x.
# Usage: bench/verify-vs-fio.sh   (env: BENCH_DIR, ROUNDS=3, FIO, STORMARK)
# Writes only inside $BENCH_DIR (default ./bench-data) and removes only what it created.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
. bench/fio-side.sh
fio_side verify
# verify_state_save=0: fio would leave local-v-0-verify.state in the working directory.
FIOW=(--name=v --filename="$OUT/fio.dat" --size=256m --rw=write --bs=4k --ioengine=psync --verify=crc32c --verify_state_save=0 --output-format=json)
mkdir "$OUT/sm"
SMW=(--rw write --bs 4k --size 256m --engine psync --verify -q)
# The files each tool checks, written once by it.
"$FIO" "${FIOW[@]}" --do_verify=0 --output="$OUT/w0.fio.json" >/dev/null
"$STORMARK" run "$OUT/sm" "${SMW[@]}" --keep --json "$OUT/w0.sm.json" >/dev/null
RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["target"]["run_dir"])' "$OUT/w0.sm.json")
for round in $(seq 1 "$ROUNDS"); do
  order="fio sm"; [ $((round % 2)) = 0 ] && order="sm fio"
  for case in verify-warm verify-cold write; do
    for tool in $order; do
      out="$OUT/$case.$round.$tool.json"
      inv=1; [ $case = verify-warm ] && inv=0
      if [ $tool = fio ]; then
        [ $case = verify-warm ] && cat "$OUT/fio.dat" >/dev/null
        case $case in
          write) "$FIO" "${FIOW[@]}" --do_verify=0 --output="$out" >/dev/null ;;
          *) "$FIO" "${FIOW[@]}" --verify_only=1 --invalidate=$inv --output="$out" >/dev/null ;;
        esac
      else
        [ $case = verify-warm ] && cat "$RUN/j0.w0.f0" >/dev/null
        case $case in
          write) "$STORMARK" run "$OUT/sm" "${SMW[@]}" --json "$out" >/dev/null ;;
          *) "$STORMARK" run "$RUN" --reuse --verify-only --size 256m --invalidate $inv -q --json "$out" >/dev/null ;;
        esac
      fi
    done
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, sys, statistics
out, rounds = sys.argv[1], int(sys.argv[2])
def fio(p, case):
    j = json.load(open(p))['jobs'][0]
    return j['write' if case == 'write' else 'read']['bw_bytes'] / 2**20
def sm(p, case):
    d = json.load(open(p)); ph = [x for x in d['phases'] if x['name'] == 'run'][0]
    if case == 'write':
        return ph['by_op']['write']['bw_bytes_per_s'] / 2**20
    # --verify-only: the bytes checked over the phase's whole time (reads and checks).
    return ph['by_op']['verify']['bytes'] / (ph['duration_ns'] / 1e9) / 2**20
print(f"{'case':12} {'fio MiB/s':>10} {'sm MiB/s':>10} {'sm/fio':>7}   per round (fio/sm)")
for case in ['verify-warm', 'verify-cold', 'write']:
    f = [fio(f'{out}/{case}.{r}.fio.json', case) for r in range(1, rounds + 1)]
    s = [sm(f'{out}/{case}.{r}.sm.json', case) for r in range(1, rounds + 1)]
    print(f"{case:12} {statistics.median(f):10.0f} {statistics.median(s):10.0f} "
          f"{statistics.median(s)/statistics.median(f):7.3f}   "
          + ' '.join(f'{a:.0f}/{b:.0f}' for a, b in zip(f, s)))
PY
