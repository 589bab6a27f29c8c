#!/usr/bin/env bash
# One coordinator driving many agents (issue 4 target: 64 agents on loopback at 1-second
# intervals cost the coordinator < 5% of one core and < 200 MiB). Starts AGENTS agents on
# 127.0.0.1, each with its own directory, runs one coordinator over all of them for RUNTIME
# seconds (1 MiB file per agent, 4 KiB direct random reads, psync: every agent sends a
# snapshot with its histograms every second), and prints the coordinator's CPU time over its
# wall time and its peak RSS (GNU time), and its CPU share in the steady state of the run.
# KIND=s3 runs an S3 workload instead (every agent GETs and PUTs 4 KiB objects, 70/30, over
# one connection against the coordinator's embedded server, `stormark s3 --embedded`): each
# snapshot then carries a histogram per operation and GET's first-byte times. The embedded
# server runs inside the coordinator's process on threads named s3-embedded; the steady-state
# figure leaves them out (per-thread times from /proc/PID/task), the whole-run one does not.
# Usage: bench/cluster-scale.sh   env: AGENTS (64), RUNTIME (30), KIND (file|s3), STORMARK=<binary>, BENCH_DIR
# Writes only a directory it creates under BENCH_DIR (default ./bench-data) and removes it.
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTS=${AGENTS:-64}
RUNTIME=${RUNTIME:-30}
KIND=${KIND:-file}
BENCH_DIR=${BENCH_DIR:-$PWD/bench-data}
if [ -z "${STORMARK:-}" ]; then
  cargo build --release --locked -q --features embedded-s3
  STORMARK=$PWD/target/release/stormark
fi
if [ ! -x /usr/bin/time ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null
fi
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
  s3)
    command=(s3 --embedded --agents "$agents" --token-file "$WORK/token" --op-mix get=70,put=30
      --obj-size 4k --objects 64 --concurrency 1) ;;
  *) echo "KIND=$KIND: expected file or s3" >&2; exit 2 ;;
esac
${PROFILE:-} /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$STORMARK" "${command[@]}" \
  --time "${RUNTIME}s" --quiet --json "$WORK/r.json" >/dev/null &
timer=$!
# Steady state: the coordinator's CPU time (utime + stime, /proc/PID/stat) from 6 s after its
# start, when every agent runs, to 2 s before the run's end.
sleep 1
coord=$(pgrep -P "$timer" -f "stormark ${command[0]}" | head -1 || true)
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
t0=$(ticks); s0=$(date +%s.%N)
sleep $((RUNTIME - 7))
t1=$(ticks); s1=$(date +%s.%N)
wait "$timer"
printf '%s %s %s %s %s\n' "$t0" "$t1" "$s0" "$s1" "$(getconf CLK_TCK)" >"$WORK/steady"
python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
wall, user, sys_, rss_kib = open(work + "/time").read().split()
wall, cpu = float(wall), float(user) + float(sys_)
r = json.load(open(work + "/r.json"))
run = [p for p in r["phases"] if p["name"] == "run"][0]
starts = list(run["host_starts_ns"].values())
print(f"status {r['status']}  hosts {len(run['by_host'])}  intervals {len(run['intervals'])}  "
      f"IOPS {run['total']['iops']:.0f}  start spread {(max(starts) - min(starts)) / 1e6:.2f} ms")
print(f"coordinator (with the embedded server, if any): wall {wall:.1f} s  cpu {cpu:.2f} s = {100 * cpu / wall:.2f}% of one core  "
      f"peak RSS {int(rss_kib) / 1024:.1f} MiB")
steady = open(work + "/steady").read().split()
t0, t1, s0, s1, hz = (float(x) for x in steady[:5]) if len(steady) == 5 else (0, 0, 0, 1, 1)
if len(steady) != 5:
    print(f"steady state not measured: {steady}")
elif t1 > 0:
    print(f"coordinator steady state: {(t1 - t0) / hz:.2f} s of CPU in {s1 - s0:.1f} s = "
          f"{100 * (t1 - t0) / hz / (s1 - s0):.2f}% of one core")
PY
