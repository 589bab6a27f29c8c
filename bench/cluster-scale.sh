#!/usr/bin/env bash
# One coordinator driving many agents (issue 4 target: 64 agents on loopback at 1-second
# intervals cost the coordinator < 5% of one core and < 200 MiB). Starts AGENTS agents on
# 127.0.0.1, each with its own directory, runs one coordinator over all of them for RUNTIME
# seconds (1 MiB file per agent, 4 KiB direct random reads, psync: every agent sends a
# snapshot with its histograms every second), and prints the coordinator's CPU time over its
# wall time and its peak RSS (GNU time), and its CPU share and resident memory (at both ends)
# in the steady state of the run.
# KIND=s3 runs an S3 workload instead (every agent GETs and PUTs 4 KiB objects, 70/30, over
# one connection against the coordinator's embedded server, `stormark s3 --embedded`): each
# snapshot then carries a histogram per operation and GET's first-byte times. The embedded
# server runs inside the coordinator's process on threads named s3-embedded; the steady-state
# figure leaves them out (per-thread times from /proc/PID/task), the whole-run one does not.
# KIND=null (issue 33's fleet): every agent runs the null engine at RATE I/Os a second (100),
# so that a thousand agents on one machine measure the coordinator, not the agents' CPU.
# Also printed: the time from the coordinator's start to its run's start (connecting to every
# agent, handshakes and clocks; validation follows inside the run), the stage's start spread
# with its uncertainty, and the merge's exactness (every sample of the hosts' histograms in
# the phase's total, counted from the HDR V2 encodings), and what the agents logged beyond
# their start (after a failed run: which side gave up on a connection).
# Without GNU time (a bare machine), the coordinator's CPU and peak RSS come from wait4(2).
# Usage: bench/cluster-scale.sh   env: AGENTS (64), RUNTIME (30), KIND (file|s3|null), RATE (100), STORMARK=<binary>, BENCH_DIR, KEEP_JSON
# Writes only a directory it creates under BENCH_DIR (default ./bench-data) and removes it.
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTS=${AGENTS:-64}
RUNTIME=${RUNTIME:-30}
# The steady state is measured from 6 s after the coordinator's start to about 2 s before the run's end.
case "$RUNTIME" in
  ''|*[!0-9]*) echo "RUNTIME=$RUNTIME: expected whole seconds, at least 10" >&2; exit 2 ;;
esac
[ "$RUNTIME" -ge 10 ] || { echo "RUNTIME=$RUNTIME: expected at least 10 (the steady state is measured from 6 s after the start to about 2 s before the end)" >&2; exit 2; }
KIND=${KIND:-file}
BENCH_DIR=${BENCH_DIR:-$PWD/bench-data}
if [ -z "${STORMARK:-}" ]; then
  cargo build --release --locked -q --features embedded-s3
  STORMARK=$PWD/target/release/stormark
fi
RATE=${RATE:-100}
# A thousand agents: as many connections and threads in the coordinator.
ulimit -n 65536 2>/dev/null || true
made_dir=no
[ -d "$BENCH_DIR" ] || { mkdir -p "$BENCH_DIR"; made_dir=yes; }
WORK=$(mktemp -d -p "$BENCH_DIR" cluster.XXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
  [ $made_dir = yes ] && rmdir "$BENCH_DIR" 2>/dev/null
  true
}
trap cleanup EXIT
head -c 32 /dev/urandom | base64 >"$WORK/token"
agents=""
targets=()
for i in $(seq 0 $((AGENTS - 1))); do
  port=$((17000 + i))
  mkdir -p "$WORK/a$i"
  "$STORMARK" agent --listen "127.0.0.1:$port" --token-file "$WORK/token" --allow-path "$WORK/a$i" \
    2>"$WORK/agent$i.log" &
  pids+=($!)
  agents+="${agents:+,}127.0.0.1:$port"
  targets+=(--target "127.0.0.1:$port=$WORK/a$i")
done
for i in $(seq 0 $((AGENTS - 1))); do
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$((17000 + i))") 2>/dev/null && break
    sleep 0.1
  done
done
echo "cores: $(nproc)  agents: $AGENTS  runtime: ${RUNTIME}s  kind: $KIND"
case $KIND in
  file)
    command=(run --agents "$agents" "${targets[@]}" --token-file "$WORK/token" --engine psync
      --direct --rw randread --bs 4k --size 1m) ;;
  null)
    printf 'kind = "null"\n[[job]]\nname = "null"\nrate_iops = %d\n' $((RATE * AGENTS)) >"$WORK/null.toml"
    command=(run --agents "$agents" --token-file "$WORK/token" --job "$WORK/null.toml") ;;
  s3)
    command=(s3 --embedded --agents "$agents" --token-file "$WORK/token" --op-mix get=70,put=30
      --obj-size 4k --objects 64 --concurrency 1) ;;
  *) echo "KIND=$KIND: expected file or s3" >&2; exit 2 ;;
esac
# wall, user and system CPU seconds and peak RSS (KiB) of the coordinator, by wait4(2).
python3 -c 'import os, subprocess, sys, time
t = time.time(); p = subprocess.Popen(sys.argv[2:]); _, _, ru = os.wait4(p.pid, 0)
open(sys.argv[1], "w").write(f"{time.time() - t} {ru.ru_utime} {ru.ru_stime} {ru.ru_maxrss}\n")' \
  "$WORK/time" ${PROFILE:-} "$STORMARK" "${command[@]}" --time "${RUNTIME}s" --quiet --json "$WORK/r.json" >/dev/null &
timer=$!
# Steady state: the coordinator's CPU time (utime + stime, /proc/PID/stat) from 6 s after its
# start, when every agent runs, to 2 s before the run's end.
sleep 1
coord=$(pgrep -f "^$STORMARK ${command[0]} " | head -1 || true)
# utime + stime of every thread of the coordinator but the embedded S3 server's. The comm
# field is in parentheses and may hold spaces: split after the last ')'.
ticks() {
  local v
  v=$(cat /proc/"$coord"/task/*/stat 2>/dev/null | awk '{
    comm = $0; sub(/^[^(]*\(/, "", comm); sub(/\).*$/, "", comm)
    rest = $0; sub(/^.*\) /, "", rest); split(rest, f, " ")
    if (comm != "s3-embedded") sum += f[12] + f[13]
  } END { print sum + 0 }')
  echo "${v:-0}"
}
sleep 5
# Its resident memory at both ends of the steady state: what a phase's seconds cost it.
rss() { awk '/^VmRSS:/ {print $2}' /proc/"$coord"/status 2>/dev/null || echo 0; }
t0=$(ticks); s0=$(date +%s.%N); r0=$(rss)
sleep $((RUNTIME - 7))
t1=$(ticks); s1=$(date +%s.%N); r1=$(rss)
wait "$timer"
printf '%s %s %s %s %s %s %s\n' "$t0" "$t1" "$s0" "$s1" "$(getconf CLK_TCK)" "${r0:-0}" "${r1:-0}" >"$WORK/steady"
# What the agents said beyond their start (counted, most frequent first): after a failed run,
# which side gave up on a connection.
said=$(cat "$WORK"/agent*.log 2>/dev/null | grep -v -e '^warning: --token-file' -e ' listening on ' \
  | sed 's/coordinator [^ ]* /coordinator * /' | sort | uniq -c | sort -rn | head -5 || true)
[ -n "$said" ] && printf 'agents said (times, line):\n%s\n' "$said"
# KEEP_JSON=FILE: the run's results document is copied there (its size is printed).
[ -n "${KEEP_JSON:-}" ] && cp "$WORK/r.json" "$KEEP_JSON" && echo "results document: $(stat -c %s "$KEEP_JSON") bytes"
python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
wall, user, sys_, rss_kib = open(work + "/time").read().split()
wall, cpu = float(wall), float(user) + float(sys_)
r = json.load(open(work + "/r.json"))
run = [p for p in r["phases"] if p["name"] == "run"][0]
starts = list(run["host_starts_ns"].values())
unc = run.get("start_uncertainty_ns")
print(f"status {r['status']}  hosts {len(run['by_host'])}  intervals {len(run['intervals'])}  "
      f"IOPS {run['total']['iops']:.0f}  start spread {(max(starts) - min(starts)) / 1e6:.2f} ms"
      + (f" (clock uncertainty {unc / 1e6:.2f} ms)" if unc else ""))
# Connecting: from the coordinator's start to its run's (started_at, ns in the document).
import base64, datetime, struct
def count(b64):
    """Samples in an HDR histogram, V2 encoding (uncompressed): ZigZag LEB128 counts, negative
    values being runs of zeros."""
    b = base64.b64decode(b64)
    (length,) = struct.unpack(">i", b[4:8])
    payload, i, total = b[40:40 + length], 0, 0
    while i < len(payload):
        shift = v = 0
        while True:
            byte = payload[i]; i += 1
            v |= (byte & 0x7F) << shift; shift += 7
            if byte < 0x80 or shift == 63:
                break
        v = (v >> 1) ^ -(v & 1)
        if v > 0:
            total += v
    return total
ops = sum(v["total"]["ops"] for v in run["by_host"].values())
samples = sum(count(h) for k, h in run["histograms"].items() if k.count("/") == 2 and not k.endswith("/connect"))
print(f"merge: total {run['total']['ops']} ops, hosts' ops {ops}, hosts' histogram samples {samples}: "
      + ("exact" if run["total"]["ops"] == ops == samples else "NOT EXACT"))
print(f"coordinator (with the embedded server, if any): wall {wall:.1f} s  cpu {cpu:.2f} s = {100 * cpu / wall:.2f}% of one core  "
      f"peak RSS {float(rss_kib) / 1024:.1f} MiB  (run {r['duration_ns'] / 1e9:.1f} s of it; the rest is connecting, cleaning up, writing)")
steady = open(work + "/steady").read().split()
t0, t1, s0, s1, hz, r0, r1 = (float(x) for x in steady[:7]) if len(steady) == 7 else (0, 0, 0, 1, 1, 0, 0)
if len(steady) != 7:
    print(f"steady state not measured: {steady}")
elif t1 > 0:
    print(f"coordinator steady state: {(t1 - t0) / hz:.2f} s of CPU in {s1 - s0:.1f} s = "
          f"{100 * (t1 - t0) / hz / (s1 - s0):.2f}% of one core; RSS {r0 / 1024:.1f} -> {r1 / 1024:.1f} MiB")
PY
