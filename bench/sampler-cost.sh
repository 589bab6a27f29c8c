#!/usr/bin/env bash
# What the 1 Hz host sampler costs (issue 3 target: < 1% of one core). Runs stormark with the
# null engine (no I/O, so the host is otherwise quiet) for RUNTIME seconds, ROUNDS times, and
# prints the sampler's own CPU time (hosts[].sampler_cpu_ns) per second of run.
# Usage: bench/sampler-cost.sh    env: RUNTIME (default 30), ROUNDS (3), STORMARK=<binary>
# Writes only a temporary directory under BENCH_DIR (default ./bench-data) and removes it.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNTIME=${RUNTIME:-30}
ROUNDS=${ROUNDS:-3}
BENCH_DIR=${BENCH_DIR:-$PWD/bench-data}
if [ -z "${STORMARK:-}" ]; then
  cargo build --release --locked -q
  STORMARK=$PWD/target/release/stormark
fi
made_dir=no
[ -d "$BENCH_DIR" ] || { mkdir -p "$BENCH_DIR"; made_dir=yes; }
OUT=$(mktemp -d -p "$BENCH_DIR" sampler.XXXX)
cleanup() { rm -rf "$OUT"; [ $made_dir = yes ] && rmdir "$BENCH_DIR" 2>/dev/null; true; }
trap cleanup EXIT
echo "cores: $(nproc)  disks: $(ls /sys/block | wc -l)  interfaces: $(ls /sys/class/net | wc -l)"
for round in $(seq 1 "$ROUNDS"); do
  "$STORMARK" run "$OUT" --engine null --rw randread --size 1m --time "${RUNTIME}s" --quiet \
    --json "$OUT/r$round.json" >/dev/null
done
python3 - "$OUT" <<'PY'
import json, sys, glob
for path in sorted(glob.glob(sys.argv[1] + "/r*.json")):
    d = json.load(open(path))
    h = d["hosts"][0]
    n = len(h["samples"])
    cpu = h["sampler_cpu_ns"] or 0
    span = h["samples"][-1]["t_ns"] - h["samples"][0]["t_ns"] + h["samples"][0]["duration_ns"] if n else 0
    print(f"samples {n:4d}  sampler cpu {cpu/1e6:8.2f} ms  per second {cpu/max(n,1)/1e3:7.1f} us  "
          f"= {100*cpu/max(span,1):.3f}% of one core")
PY
