#!/usr/bin/env bash
# stormark net --mode rtt against sockperf (the reference), on loopback, alternating: TCP
# ping-pong of SIZE-byte messages on one connection, closed loop (sockperf --mps=max). Prints
# the round-trip p50 and p99 of each and the ratios. sockperf reports half the round trip
# (its "latency"); it is doubled here so that both columns are round trips.
# Target (issue 19): p50 and p99 within 10% of sockperf's at the same message size.
# Usage: bench/vs-sockperf.sh   env: ROUNDS=3 RUNTIME=10 SIZE=64 STORMARK=<binary>
# Installs sockperf (Debian) when missing; writes only a temporary directory it removes.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-10}
SIZE=${SIZE:-64}
if [ -z "${STORMARK:-}" ]; then
  cargo build --release --locked -q
  STORMARK=$PWD/target/release/stormark
fi
command -v sockperf >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sockperf >/dev/null; }
WORK=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
# Each tool's server runs only for its own round (an idle sockperf server polls).
serve() { "$@" >/dev/null 2>&1 & pids+=($!); server=$!; sleep 1; }
stop() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
echo "cores: $(nproc)  rounds: $ROUNDS  runtime: ${RUNTIME}s  message: $SIZE bytes  (loopback)"
printf '%5s %16s %16s %16s %16s %8s %8s\n' round "sockperf p50 us" "stormark p50 us" "sockperf p99 us" "stormark p99 us" "p50 x" "p99 x"
for round in $(seq 1 "$ROUNDS"); do
  serve sockperf sr --tcp -i 127.0.0.1 -p 17912
  sockperf pp --tcp -i 127.0.0.1 -p 17912 -m "$SIZE" -t "$RUNTIME" --mps=max >"$WORK/sp.txt" 2>&1
  stop
  serve "$STORMARK" net server --listen 127.0.0.1:17911
  "$STORMARK" net client 127.0.0.1:17911 --mode rtt -l "$SIZE" -t "${RUNTIME}s" -q --json "$WORK/sm.json" >/dev/null
  stop
  python3 - "$WORK" "$round" <<'PY'
import json, re, sys
work, rnd = sys.argv[1:]
text = open(work + "/sp.txt").read()
pct = lambda p: 2 * float(re.search(r"percentile %s = +([0-9.]+)" % re.escape(p), text).group(1))
sp50, sp99 = pct("50.000"), pct("99.000")
lat = json.load(open(work + "/sm.json"))["phases"][0]["by_op"]["rtt"]["latency_ns"]
sm50, sm99 = lat["p50"] / 1e3, lat["p99"] / 1e3
print(f"{rnd:>5} {sp50:>16.2f} {sm50:>16.2f} {sp99:>16.2f} {sm99:>16.2f} {sm50 / sp50:>8.3f} {sm99 / sp99:>8.3f}")
PY
done
echo "(x: stormark's round trip over sockperf's; below 1, stormark's is shorter)"
