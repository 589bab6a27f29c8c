#!/usr/bin/env bash
# stormark against libiscsi's own iscsi-perf (and, with FIO=/path/to/fio, fio's libiscsi
# engine) on one iSCSI LUN, alternating rounds: 4 KiB random reads at each depth in DEPTHS,
# every tool over libiscsi to the same target, and the ratios of the medians. The target is tgt's tgtd on a loopback portal with a LUN over a file (SIZE) in
# BENCH_DIR, unless URL names another (then nothing is started; writes are never made).
#
# Usage: bench/iscsi-vs-perf.sh   (env: ROUNDS=3, RUNTIME=5, DEPTHS="1 8 32", SIZE=256m,
#        STORMARK=target/release/stormark, URL=iscsi://HOST/IQN/LUN, BENCH_DIR, FIO: a fio
#        built with --enable-libiscsi and libiscsi-dev, since Debian's has no libiscsi engine)
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
fio_iops() { # depth
  # fio's file names escape every colon of the URL.
  "$FIO" --name=iscsibench --ioengine=libiscsi --filename="$(printf '%s' "$URL" | sed 's/:/\\:/g')" \
    --rw=randread --bs=4k --iodepth="$1" --time_based --runtime="$RUNTIME" \
    --output-format=json --output="$OUT/f.json" >/dev/null
  python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['jobs'][0]['read']['iops']))" "$OUT/f.json"
}
sm_iops() { # depth
  "$STORMARK" run "$URL" --rw randread --bs 4k --iodepth "$1" --time "${RUNTIME}s" -q --json "$OUT/r.json" >/dev/null
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(round(r['phases'][0]['total']['iops']))" "$OUT/r.json"
}
for depth in $DEPTHS; do
  : > "$OUT/p.txt"; : > "$OUT/s.txt"; : > "$OUT/f.txt"
  tools="p s"; [ -n "${FIO:-}" ] && tools="p s f"
  for round in $(seq "$ROUNDS"); do
    # Each round in another order.
    order=$(echo $tools | tr ' ' '\n' | awk -v r="$round" '{a[NR]=$0} END {for (i=0;i<NR;i++) print a[(i+r)%NR+1]}')
    for tool in $order; do
      case $tool in
        p) perf_iops "$depth" >> "$OUT/p.txt" ;;
        s) sm_iops "$depth" >> "$OUT/s.txt" ;;
        f) fio_iops "$depth" >> "$OUT/f.txt" ;;
      esac
    done
  done
  python3 - "$depth" "$OUT/p.txt" "$OUT/s.txt" "$OUT/f.txt" <<'PY'
import statistics, sys
d = sys.argv[1]
p, s, f = ([float(x) for x in open(a)] for a in sys.argv[2:5])
mp, ms = statistics.median(p), statistics.median(s)
line = (f"depth {d:>3}: iscsi-perf {mp:9.0f} IOPS ({', '.join(f'{x:.0f}' for x in p)})  "
        f"stormark {ms:9.0f} ({', '.join(f'{x:.0f}' for x in s)})  stormark/iscsi-perf {ms / mp:.3f}x")
if f:
    mf = statistics.median(f)
    line += f"  fio {mf:9.0f} ({', '.join(f'{x:.0f}' for x in f)})  stormark/fio {ms / mf:.3f}x"
print(line)
PY
done
