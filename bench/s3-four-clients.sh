#!/usr/bin/env bash
# The how-to of docs/s3.md, run: the most GETs per second under a p99 target from four
# clients at once. Four network namespaces on a bridge, an agent in each, one MinIO on the
# bridge; the coordinator runs the latency-target search over the four agents. Prints the
# search's table (every step runs on all four clients at once; the p99 is that of the merged
# histogram of every GET).
# Usage: bench/s3-four-clients.sh   env: TARGET='p99<=20ms' STEP=5s CONC=16 MINIO= STORMARK=
# Needs root (ip netns). Builds nothing but stormark (release); MinIO:
# .ci/build-s3-servers.sh minio.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${TARGET:-p99<=20ms}
STEP=${STEP:-5s}
CONC=${CONC:-16}
gobin="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"
MINIO=${MINIO:-$gobin/minio}
[ -x "$MINIO" ] || { echo "$MINIO missing: run .ci/build-s3-servers.sh minio" >&2; exit 1; }
if [ -z "${STORMARK:-}" ]; then
  cargo build --release --locked -q
  STORMARK=target/release/stormark
fi
STORMARK=$(realpath "$STORMARK")
work=$(mktemp -d "${BENCH_DIR:-$PWD/bench-data}.s3four.XXXX")
id=$((RANDOM % 900 + 100))
br=s4b$id; net=10.77.$((id % 250))
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for i in 0 1 2 3; do ip netns del s4n${id}h$i 2>/dev/null || true; done
  ip link del "$br" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
ip link add "$br" type bridge
ip addr add "$net.1/24" dev "$br"
ip link set "$br" up
agents=()
echo "bench-token-0123456789abcdef" > "$work/token"
for i in 0 1 2 3; do
  ns=s4n${id}h$i
  ip netns add "$ns"
  ip link add s4v${id}h$i type veth peer name s4i${id}h$i
  ip link set s4v${id}h$i master "$br" up
  ip link set s4i${id}h$i netns "$ns"
  ip netns exec "$ns" ip addr add "$net.$((i + 2))/24" dev s4i${id}h$i
  ip netns exec "$ns" ip link set s4i${id}h$i up
  ip netns exec "$ns" ip link set lo up
  mkdir -p "$work/allowed$i" "$work/state$i"
  ip netns exec "$ns" "$STORMARK" agent --listen "$net.$((i + 2)):7878" --token-file "$work/token" \
    --allow-path "$work/allowed$i" --state-dir "$work/state$i" > "$work/agent$i.log" 2>&1 &
  pids+=($!)
  agents+=("$net.$((i + 2)):7878")
done
AK=bench-admin; SK=bench-secret-key-0123
MINIO_ROOT_USER=$AK MINIO_ROOT_PASSWORD=$SK MINIO_BROWSER=off \
  "$MINIO" server "$work/data" --quiet --address "$net.1:9000" --console-address "$net.1:9001" \
  > "$work/minio.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  curl -sf "http://$net.1:9000/minio/health/ready" >/dev/null 2>&1 && break
  sleep 0.2
done
sleep 1
list=$(IFS=,; echo "${agents[*]}")
set -x
"$STORMARK" s3 --endpoint "http://$net.1:9000" --bucket bench --create-bucket \
  --access-key "$AK" --secret-key "$SK" --op-mix get --obj-size 64k --objects 200 \
  --concurrency "$CONC" --target-latency "$TARGET" --step-time "$STEP" \
  --agents "$list" --token-file "$work/token" --json "$work/r.json"
