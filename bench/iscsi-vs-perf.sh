#!/usr/bin/env bash
# stormark against libiscsi's own iscsi-perf on one iSCSI LUN, alternating rounds: 4 KiB random
# reads at each depth in DEPTHS, both tools over libiscsi to the same target, and the ratio of
# the medians. The target is tgt's tgtd on a loopback portal with a LUN over a file (SIZE) in
# BENCH_DIR, unless URL names another (then nothing is started; writes are never made).
#
# Usage: bench/iscsi-vs-perf.sh   (env: ROUNDS=3, RUNTIME=5, DEPTHS="1 8 32", SIZE=256m,
#        STORMARK=target/release/stormark, URL=iscsi://HOST/IQN/LUN, BENCH_DIR)
# Needs root (tgtd), tgt and libiscsi-bin (iscsi-perf). Writes only inside $BENCH_DIR (default
# ./bench-data) and removes only what it created.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3} RUNTIME=${RUNTIME:-5} DEPTHS=${DEPTHS:-"1 8 32"} SIZE=${SIZE:-256m}
STORMARK=${STORMARK:-target/release/stormark}
BENCH_DIR=${BENCH_DIR:-bench-data}
made_dir=no; [ -d "$BENCH_DIR" ] || { mkdir -p "$BENCH_DIR"; made_dir=yes; }
OUT=$(mktemp -d "$BENCH_DIR/iscsi.XXXX")
tgt_pid="" ctl=""
cleanup() {
  # tgtd holding a target does not stop on SIGTERM.
  [ -n "$tgt_pid" ] && kill -9 "$tgt_pid" 2>/dev/null && { wait "$tgt_pid" 2>/dev/null || true; }
  [ -n "$tgt_pid" ] && rm -f "/var/run/tgtd/socket.$ctl" "/var/run/tgtd/socket.$ctl.lock"
  rm -rf "$OUT"; [ $made_dir = yes ] && rmdir "$BENCH_DIR" 2>/dev/null; true
}
trap cleanup EXIT
if [ -z "${URL:-}" ]; then
  truncate -s "$SIZE" "$OUT/lun.img"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  ctl=$((port % 30000 + 1000))
  tgtd -f -C "$ctl" --iscsi "portal=127.0.0.1:$port" >/dev/null 2>&1 & tgt_pid=$!
  iqn="iqn.2026-11.org.stormark.bench:lun"
  for i in $(seq 50); do tgtadm -C "$ctl" --lld iscsi --op show --mode target >/dev/null 2>&1 && break; sleep 0.1; done
  tgtadm -C "$ctl" --lld iscsi --op new --mode target --tid 1 -T "$iqn"
  tgtadm -C "$ctl" --lld iscsi --op new --mode logicalunit --tid 1 --lun 1 -b "$OUT/lun.img"
  tgtadm -C "$ctl" --lld iscsi --op bind --mode target --tid 1 -I ALL
  URL="iscsi://127.0.0.1:$port/$iqn/1"
  # Data in the LUN's file, so that neither tool reads holes.
  head -c "$(( $(stat -c %s "$OUT/lun.img") ))" /dev/urandom > "$OUT/lun.img"
fi
echo "target: $URL  stormark: $("$STORMARK" --version)  cores: $(nproc)"
perf_iops() { # depth
  # iscsi-perf runs until interrupted and prints its running average each second.
  { timeout -s INT "$RUNTIME" iscsi-perf -m "$1" -b 8 -r "$URL" 2>&1 || true; } | tr '\r' '\n' |
    grep -o 'iops average [0-9]*' | tail -1 | awk '{print $3}'
}
sm_iops() { # depth
  "$STORMARK" run "$URL" --rw randread --bs 4k --iodepth "$1" --time "${RUNTIME}s" -q --json "$OUT/r.json" >/dev/null
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(round(r['phases'][0]['total']['iops']))" "$OUT/r.json"
}
for depth in $DEPTHS; do
  : > "$OUT/p.txt"; : > "$OUT/s.txt"
  for round in $(seq "$ROUNDS"); do
    order="p s"; [ $((round % 2)) = 0 ] && order="s p"
    for tool in $order; do
      if [ $tool = p ]; then perf_iops "$depth" >> "$OUT/p.txt"; else sm_iops "$depth" >> "$OUT/s.txt"; fi
    done
  done
  python3 - "$depth" "$OUT/p.txt" "$OUT/s.txt" <<'PY'
import statistics, sys
d, p, s = sys.argv[1], [float(x) for x in open(sys.argv[2])], [float(x) for x in open(sys.argv[3])]
mp, ms = statistics.median(p), statistics.median(s)
print(f"depth {d:>3}: iscsi-perf {mp:9.0f} IOPS ({', '.join(f'{x:.0f}' for x in p)})  "
      f"stormark {ms:9.0f} ({', '.join(f'{x:.0f}' for x in s)})  stormark/iscsi-perf {ms / mp:.3f}x")
PY
done
