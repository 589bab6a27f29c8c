#!/usr/bin/env bash
# The latency-target search against fio: stormark searches for the most 4 KiB random-read IOPS
# with p99 <= TARGET on one file (direct, io_uring); then fio runs every closed-loop step the
# search ran (same workers and depth, same file, same time) and the two are set side by side:
# IOPS ratio, p99 of each, and whether each met the target. The search's answer should match
# the best step fio also sees meeting the target, and fio should see the first broken step
# broken too (steps near the target may disagree by noise).
# Usage: bench/search-vs-fio.sh
#   env: BENCH_DIR, TARGET (default p99<=2ms), STEP (seconds, default 5), JOBS (most workers,
#   default 2), FIO, STORMARK (with STORMARK set nothing is built)
# Writes only inside $BENCH_DIR (default ./bench-data) and removes only what it created there.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${TARGET:-p99<=2ms}
STEP=${STEP:-5}
JOBS=${JOBS:-2}
BENCH_DIR=${BENCH_DIR:-$PWD/bench-data}
FIO=${FIO:-fio}
if ! command -v "$FIO" >/dev/null; then
  echo "installing fio"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio >/dev/null
fi
if [ -z "${STORMARK:-}" ]; then
  cargo build --release --locked -q
  STORMARK=$PWD/target/release/stormark
fi
made_dir=no
[ -d "$BENCH_DIR" ] || { mkdir -p "$BENCH_DIR"; made_dir=yes; }
OUT=$(mktemp -d -p "$BENCH_DIR" search.XXXX)
FILE=$(mktemp -p "$BENCH_DIR" bench.XXXX.dat)
cleanup() { rm -rf "$OUT"; rm -f "$FILE"; [ $made_dir = yes ] && rmdir "$BENCH_DIR" 2>/dev/null; true; }
trap cleanup EXIT
echo "fio: $("$FIO" --version)  stormark: $("$STORMARK" --version)  cores: $(nproc)  target: $(df -hT "$BENCH_DIR" 2>/dev/null | tail -1 | awk '{print $1, $2}')"
dd if=/dev/urandom of="$FILE" bs=1M count=1024 status=none
sync

"$STORMARK" run "$FILE" --size 1g --rw randread --bs 4k --direct --engine io_uring --jobs "$JOBS" \
  --target-latency "$TARGET" --step-time "${STEP}s" --ramp 1s --quiet --json "$OUT/search.json" >/dev/null

# The closed-loop steps: "jobs iodepth" per line.
python3 - "$OUT/search.json" >"$OUT/steps" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1]))['search']['steps']:
    if s['load']['rate_iops'] is None:
        print(s['phase'], s['load']['jobs'], s['load']['iodepth'])
PY
while read -r phase jobs depth; do
  "$FIO" --name=bench --filename="$FILE" --size=1g --rw=randread --bs=4k --ioengine=io_uring \
    --direct=1 --numjobs="$jobs" --iodepth="$depth" --time_based --runtime="$STEP" --ramp_time=1 \
    --norandommap --randrepeat=0 --group_reporting --lat_percentiles=1 \
    --output-format=json --output="$OUT/$phase.fio.json" >/dev/null
done <"$OUT/steps"

python3 - "$OUT" "$TARGET" <<'PY'
import json, sys, re
out, target = sys.argv[1], sys.argv[2]
limit_ns = json.load(open(f'{out}/search.json'))['search']['targets'][0]['limit_ns']
s = json.load(open(f'{out}/search.json'))['search']
print(f"{'step':15} {'load':>7} {'sm IOPS':>9} {'fio IOPS':>9} {'ratio':>6} {'sm p99 us':>10} {'fio p99 us':>10}  sm/fio meet {target}")
agree = 0; n = 0; fio_best = None
for st in s['steps']:
    load = f"{st['load']['jobs']}x{st['load']['iodepth']}"
    if st['load']['rate_iops'] is not None:
        print(f"{st['phase']:15} {load:>7} {st['iops']:9.0f} {'(open loop at ' + format(st['load']['rate_iops'], '.0f') + ')':>30}")
        continue
    j = json.load(open(f"{out}/{st['phase']}.fio.json"))['jobs'][0]['read']
    fio_p99 = j['lat_ns']['percentile']['99.000000']
    fio_met = fio_p99 <= limit_ns
    if fio_met and (fio_best is None or j['iops'] > fio_best): fio_best = j['iops']
    n += 1; agree += fio_met == st['met']
    print(f"{st['phase']:15} {load:>7} {st['iops']:9.0f} {j['iops']:9.0f} {st['iops']/j['iops']:6.3f} "
          f"{st['latency_ns'][0]/1e3:10.0f} {fio_p99/1e3:10.0f}  {'yes' if st['met'] else 'no'}/{'yes' if fio_met else 'no'}")
print(f"search answer: {s['best_iops'] or 0:.0f} IOPS ({s['best']}, ended {s['ended']}); "
      f"best closed-loop step fio saw meeting the target: {fio_best or 0:.0f} IOPS; "
      f"met/missed agree on {agree} of {n} closed-loop steps")
PY
