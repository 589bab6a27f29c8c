#!/usr/bin/env bash
# stormark s3 against warp (MinIO's S3 benchmark, the reference), on the same MinIO, alternating:
# PUT and GET, 4 KiB and 1 MiB objects, concurrency 8 and 32. Prints each tool's operations
# per second, MiB/s and the client's CPU time per operation, and the ratios stormark/warp.
# CPU per operation is read from /proc/<pid>/stat over the middle of each run (after the
# objects to read are written and the first seconds), divided by the operations the tool
# reports per second over that time: both tools are charged the same way.
# Targets (issue 18): >= 2x warp's operations per client CPU-second on 4 KiB objects, and at
# least warp's throughput on 1 MiB objects.
# Usage: bench/vs-warp.sh   env: ROUNDS=2 RUNTIME=12 ONLY=<case prefix> MINIO= WARP= STORMARK=
# Builds nothing but stormark (release); MinIO and warp: .ci/build-s3-servers.sh minio warp.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-2}
RUNTIME=${RUNTIME:-12}
gobin="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"
MINIO=${MINIO:-$gobin/minio}
WARP=${WARP:-$gobin/warp}
for b in "$MINIO" "$WARP"; do
  [ -x "$b" ] || { echo "$b missing: run .ci/build-s3-servers.sh minio warp" >&2; exit 1; }
done
if [ -z "${STORMARK:-}" ]; then
  cargo build --release --locked -q
  STORMARK=target/release/stormark
fi
work=$(mktemp -d "${BENCH_DIR:-$PWD/bench-data}.s3.XXXX")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
AK=bench-admin; SK=bench-secret-key-0123
MINIO_ROOT_USER=$AK MINIO_ROOT_PASSWORD=$SK MINIO_BROWSER=off \
  "$MINIO" server "$work/data" --quiet --address "127.0.0.1:$port" --console-address "127.0.0.1:$((port + 1))" \
  >"$work/minio.log" 2>&1 &
minio_pid=$!
trap 'kill $minio_pid 2>/dev/null; wait $minio_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/minio/health/ready" >/dev/null 2>&1 && break
  python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/minio/health/ready')" 2>/dev/null && break
  sleep 0.2
done
endpoint="http://127.0.0.1:$port"
hz=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# Runs "$@" in the background; prints the CPU seconds it used between 40% and 85% of RUNTIME
# and the length of that window.
sample() {
  "$@" > "$work/out" 2>&1 &
  local pid=$! a b t1 t2 c1 c2
  a=$(echo "$RUNTIME * 0.40" | bc -l); b=$(echo "$RUNTIME * 0.45" | bc -l)
  sleep "$a"; c1=$(cpu_ticks $pid); t1=$(date +%s.%N)
  sleep "$b"; c2=$(cpu_ticks $pid); t2=$(date +%s.%N)
  wait $pid || true
  echo "$(echo "($c2 - $c1) / $hz" | bc -l) $(echo "$t2 - $t1" | bc -l)"
}

printf '%-22s %12s %12s %7s %10s %10s %9s %9s %7s\n' case "warp ops/s" "sm ops/s" ratio "warp MiB/s" "sm MiB/s" "warp us/op" "sm us/op" "cpu x"
for op in put get; do
 for size in 4KiB 1MiB; do
  for conc in 8 32; do
   case_name="$op-$size-c$conc"
   [[ -n "${ONLY:-}" && $case_name != ${ONLY}* ]] && continue
   objects=500; [ "$size" = 1MiB ] && objects=100
   sm_size=${size/KiB/k}; sm_size=${sm_size/MiB/m}
   declare -a W=() S=() WB=() SB=() WC=() SC=()
   for r in $(seq "$ROUNDS"); do
    for tool in warp stormark; do
     if [ "$tool" = warp ]; then
       extra=(); [ "$op" = get ] && extra=(--objects "$objects")
       read -r cpu win < <(sample "$WARP" "$op" --host "127.0.0.1:$port" --access-key "$AK" --secret-key "$SK" \
          --bucket warp-bench --obj.size "$size" --concurrent "$conc" --duration "${RUNTIME}s" \
          --benchdata "$work/warp-$case_name-$r" "${extra[@]}")
       line=$(grep -m1 'Average:' "$work/out")
       ops=$(sed -E 's/.*, ([0-9.]+) obj\/s.*/\1/' <<<"$line")
       mib=$(sed -E 's/.*Average: ([0-9.]+) MiB\/s.*/\1/' <<<"$line")
       W+=("$ops"); WB+=("$mib"); WC+=("$(echo "$cpu * 1000000 / ($ops * $win)" | bc -l)")
     else
       read -r cpu win < <(sample "$STORMARK" s3 --endpoint "$endpoint" --bucket sm-bench --create-bucket \
          --access-key "$AK" --secret-key "$SK" --op-mix "$op" --obj-size "$sm_size" --objects "$objects" \
          --concurrency "$conc" --time "${RUNTIME}s" -q --json "$work/sm.json")
       read -r ops mib < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=[p for p in d["phases"] if p["kind"]=="run"][0]["total"]; print(t["iops"], t["bw_bytes_per_s"]/1048576)' "$work/sm.json")
       S+=("$ops"); SB+=("$mib"); SC+=("$(echo "$cpu * 1000000 / ($ops * $win)" | bc -l)")
     fi
    done
   done
   mean() { printf '%s\n' "$@" | awk '{s+=$1} END {printf "%.1f", s/NR}'; }
   w=$(mean "${W[@]}"); s=$(mean "${S[@]}"); wc=$(mean "${WC[@]}"); sc=$(mean "${SC[@]}")
   printf '%-22s %12s %12s %7.3f %10s %10s %9.1f %9.1f %7.2f\n' "$case_name" "$w" "$s" "$(echo "$s / $w" | bc -l)" \
     "$(mean "${WB[@]}")" "$(mean "${SB[@]}")" "$wc" "$sc" "$(echo "$wc / $sc" | bc -l)"
  done
 done
done
echo "(cpu x: warp's client CPU per operation over stormark's: above 1, stormark uses less)"
