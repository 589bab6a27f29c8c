#!/usr/bin/env bash
# stormark net against iperf3 (the reference), on loopback, alternating: TCP throughput with 1
# and 4 streams, each tool with its default write size (iperf3 128 KiB, stormark 1 MiB), then
# both with the same (LEN, default 128k). Prints each tool's Gbit/s (as its receiver counted) and the CPU time both ends
# spent per GiB moved (client + server, utime + stime from /proc), and the ratios.
# Targets (issue 19): throughput at least 1.0x iperf3's, at no more CPU per byte.
# Usage: bench/vs-iperf3.sh   env: ROUNDS=3 RUNTIME=10 LEN=128k STORMARK=<binary>
# Installs iperf3 (Debian) when missing; writes only a temporary directory it removes.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-10}
LEN=${LEN:-128k}
if [ -z "${STORMARK:-}" ]; then
  cargo build --release --locked -q
  STORMARK=$PWD/target/release/stormark
fi
command -v iperf3 >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3 >/dev/null; }
WORK=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
"$STORMARK" net server --listen 127.0.0.1:17901 2>/dev/null & pids+=($!); sm_server=$!
iperf3 -s -p 17902 >/dev/null 2>&1 & pids+=($!); ip_server=$!
sleep 1
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
echo "cores: $(nproc)  rounds: $ROUNDS  runtime: ${RUNTIME}s  (loopback)"
for case in "1 default" "4 default" "1 $LEN" "4 $LEN"; do
  read -r streams len <<<"$case"
  if [ "$len" = default ]; then ip_len=(); sm_len=(); else ip_len=(-l "$len"); sm_len=(-l "$len"); fi
  for round in $(seq 1 "$ROUNDS"); do
    # iperf3
    s0=$(ticks $ip_server)
    /usr/bin/time -f "%U %S" -o "$WORK/t" iperf3 -c 127.0.0.1 -p 17902 -t "$RUNTIME" -P "$streams" "${ip_len[@]}" -J >"$WORK/ip.json"
    s1=$(ticks $ip_server)
    python3 - "$WORK" "$s0" "$s1" "$hz" iperf3 "$streams/$len" >>"$WORK/rows" <<'PY'
import json, sys
work, s0, s1, hz, tool, streams = sys.argv[1:]
u, s = open(work + "/t").read().split()[-2:]
cpu = float(u) + float(s) + (float(s1) - float(s0)) / float(hz)
d = json.load(open(work + "/ip.json"))["end"]["sum_received"]
print(tool, streams, d["bits_per_second"] / 1e9, cpu / (d["bytes"] / 2**30))
PY
    # stormark
    s0=$(ticks $sm_server)
    /usr/bin/time -f "%U %S" -o "$WORK/t" "$STORMARK" net client 127.0.0.1:17901 -t "${RUNTIME}s" -P "$streams" "${sm_len[@]}" -q --json "$WORK/sm.json" >/dev/null
    s1=$(ticks $sm_server)
    python3 - "$WORK" "$s0" "$s1" "$hz" stormark "$streams/$len" >>"$WORK/rows" <<'PY'
import json, sys
work, s0, s1, hz, tool, streams = sys.argv[1:]
u, s = open(work + "/t").read().split()[-2:]
cpu = float(u) + float(s) + (float(s1) - float(s0)) / float(hz)
p = json.load(open(work + "/sm.json"))["phases"][0]["by_op"]["send"]
print(tool, streams, p["bw_bytes_per_s"] * 8 / 1e9, cpu / (p["bytes"] / 2**30))
PY
  done
done
python3 - "$WORK/rows" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
print(f"{'streams/write':>13} {'iperf3 Gbit/s':>14} {'stormark Gbit/s':>16} {'ratio':>6} {'iperf3 cpu s/GiB':>17} {'stormark cpu s/GiB':>19} {'cpu ratio':>9}")
for streams in dict.fromkeys(r[1] for r in rows):
    ip = [r for r in rows if r[0] == "iperf3" and r[1] == streams]
    sm = [r for r in rows if r[0] == "stormark" and r[1] == streams]
    for a, b in zip(ip, sm):
        print(f"{streams:>13} {float(a[2]):>14.2f} {float(b[2]):>16.2f} {float(b[2]) / float(a[2]):>6.3f} {float(a[3]):>17.3f} {float(b[3]):>19.3f} {float(b[3]) / float(a[3]):>9.3f}")
    gi, gs = st.median(float(r[2]) for r in ip), st.median(float(r[2]) for r in sm)
    ci, cs = st.median(float(r[3]) for r in ip), st.median(float(r[3]) for r in sm)
    print(f"{streams:>13} median: throughput {gs / gi:.3f}x iperf3's, CPU per byte {cs / ci:.3f}x iperf3's")
print("(cpu ratio: stormark's CPU per byte over iperf3's; below 1, stormark uses less)")
PY
