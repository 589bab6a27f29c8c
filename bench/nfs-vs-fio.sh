#!/usr/bin/env bash
# stormark against fio's nfs engine (both over libnfs, NFSv3) on one NFS export, alternating
# rounds: 4 KiB random reads at each depth in DEPTHS, then random writes at depth 8, and the
# ratio of the medians. The server is nfs-ganesha (VFS backend) exporting a directory in
# BENCH_DIR, started in a network namespace of its own with its own rpcbind, unless URL names
# another share (then nothing is started).
#
# Usage: FIO=/path/to/fio bench/nfs-vs-fio.sh   (env: ROUNDS=3, RUNTIME=5, DEPTHS="1 8 32",
#        B=/path/to/another/stormark instead of FIO to compare two builds,
#        SIZE=256m, STORMARK=target/release/stormark, URL=nfs://SERVER/EXPORT/DIR, BENCH_DIR)
# FIO must be a fio with the nfs engine (`fio --enghelp` lists nfs): Debian's 3.33 has not;
# build fio from source with libnfs-dev installed (./configure finds it). Needs root (ganesha,
# namespaces). Writes only inside $BENCH_DIR (default ./bench-data) and on the share, and
# removes only what it created.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3} RUNTIME=${RUNTIME:-5} DEPTHS=${DEPTHS:-"1 8 32"} SIZE=${SIZE:-256m}
STORMARK=${STORMARK:-target/release/stormark}
# B=/path/to/another/stormark: that build in fio's place (an engine change against the build
# before it, alternating in the same way; no fio needed).
B=${B:-}
if [ -z "$B" ]; then
  FIO=${FIO:?give FIO=/path/to/fio built with the nfs engine, or B=/path/to/another/stormark}
  "$FIO" --enghelp 2>&1 | grep -qx $'\tnfs' || { echo "$FIO has no nfs engine" >&2; exit 2; }
fi
BENCH_DIR=${BENCH_DIR:-bench-data}
made_dir=no; [ -d "$BENCH_DIR" ] || { mkdir -p "$BENCH_DIR"; made_dir=yes; }
OUT=$(mktemp -d "$PWD/$BENCH_DIR/nfs.XXXX")
ns="" pids=()
cleanup() {
  for p in "${pids[@]}" $(cat "$OUT"/*.pid 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
  [ -n "$ns" ] && { ip link delete "v$ns" 2>/dev/null; ip netns delete "$ns" 2>/dev/null; }
  rm -rf "$OUT"; [ $made_dir = yes ] && rmdir "$BENCH_DIR" 2>/dev/null; true
}
trap cleanup EXIT
if [ -z "${URL:-}" ]; then
  ns="smnfs$$"; net="10.$((200 + $$ % 50)).$(($$ % 250))"
  ip netns add "$ns"
  ip link add "v$ns" type veth peer name "i$ns"
  ip link set "i$ns" netns "$ns"
  ip addr add "$net.1/24" dev "v$ns"; ip link set "v$ns" up
  ip netns exec "$ns" ip addr add "$net.2/24" dev "i$ns"
  ip netns exec "$ns" ip link set "i$ns" up; ip netns exec "$ns" ip link set lo up
  mkdir -p "$OUT/export" "$OUT/recovery"
  cat > "$OUT/ganesha.conf" <<CONF
NFS_CORE_PARAM { Protocols = 3; MNT_Port = 20048; Enable_NLM = false; Enable_RQUOTA = false; mount_path_pseudo = true; }
NFSV4 { Graceless = true; RecoveryRoot = $OUT/recovery; }
EXPORT { Export_Id = 1; Path = $OUT/export; Pseudo = /export; Access_Type = RW; Squash = No_Root_Squash; Protocols = 3; Transports = TCP; SecType = sys; FSAL { Name = VFS; } }
CONF
  ip netns exec "$ns" sh -c "mount -t tmpfs tmpfs /run && mkdir -p /run/rpcbind; rpcbind -f & echo \$! > $OUT/rpcbind.pid;
    for i in 1 2 3 4 5 6 7 8 9 10; do [ -S /run/rpcbind.sock ] && break; sleep 0.2; done;
    exec ganesha.nfsd -F -f $OUT/ganesha.conf -L $OUT/ganesha.log -p $OUT/ganesha.pid -N NIV_EVENT" \
    >/dev/null 2>&1 & pids+=($!); disown
  for i in $(seq 100); do (exec 3<>"/dev/tcp/$net.2/2049") 2>/dev/null && break; sleep 0.1; done
  URL="nfs://$net.2/export"
fi
other=fio; [ -n "$B" ] && other=B
echo "share: $URL  stormark: $("$STORMARK" --version)  $other: $([ -n "$B" ] && echo "$B" || "$FIO" --version)  cores: $(nproc)"
fio_iops() { # rw depth
  "$FIO" --name=nfsbench --ioengine=nfs --nfs_url="$URL" --filename=fio.bench --rw="$1" \
    --bs=4k --iodepth="$2" --size="$SIZE" --time_based --runtime="$RUNTIME" \
    --output-format=json --output="$OUT/f.json" >/dev/null 2>>"$OUT/f.err"
  python3 -c "import json,sys; j=json.load(open(sys.argv[1]))['jobs'][0]; print(round(j['read']['iops']+j['write']['iops']))" "$OUT/f.json"
}
sm_iops() { # rw depth [binary]
  "${3:-$STORMARK}" run "$URL" --rw "$1" --bs 4k --iodepth "$2" --size "$SIZE" --time "${RUNTIME}s" -q --json "$OUT/r.json" >/dev/null
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(round([p for p in r['phases'] if p['name']=='run'][0]['total']['iops']))" "$OUT/r.json"
}
# fio's nfs engine lays out no file: its file is written once, before the rounds.
[ -n "$B" ] || "$FIO" --name=nfsbench --ioengine=nfs --nfs_url="$URL" --filename=fio.bench --rw=write --bs=1m \
  --size="$SIZE" --output="$OUT/prep.txt" >/dev/null
cases=""; for d in $DEPTHS; do cases="$cases randread:$d"; done; cases="$cases randwrite:8"
for c in $cases; do
  rw=${c%:*} depth=${c#*:}
  : > "$OUT/f.txt"; : > "$OUT/s.txt"
  for round in $(seq "$ROUNDS"); do
    order="f s"; [ $((round % 2)) = 0 ] && order="s f"
    for tool in $order; do
      if [ $tool = s ]; then sm_iops "$rw" "$depth" >> "$OUT/s.txt"
      elif [ -n "$B" ]; then sm_iops "$rw" "$depth" "$B" >> "$OUT/f.txt"
      else fio_iops "$rw" "$depth" >> "$OUT/f.txt"; fi
    done
  done
  python3 - "$rw" "$depth" "$OUT/f.txt" "$OUT/s.txt" "$other" <<'PY'
import statistics, sys
rw, d, f, s, other = sys.argv[1], sys.argv[2], [float(x) for x in open(sys.argv[3])], [float(x) for x in open(sys.argv[4])], sys.argv[5]
mf, ms = statistics.median(f), statistics.median(s)
print(f"{rw:>9} depth {d:>3}: {other} {mf:9.0f} IOPS ({', '.join(f'{x:.0f}' for x in f)})  "
      f"stormark {ms:9.0f} ({', '.join(f'{x:.0f}' for x in s)})  stormark/{other} {ms / mf:.3f}x")
PY
done
# fio 3.33's nfs engine complains of some completions (EFAULT) as it goes; said, not hidden.
n=$(grep -c "Failed NFS operation" "$OUT/f.err" 2>/dev/null || true)
: "${n:=0}"
[ "${n:-0}" -gt 0 ] && echo "fio printed 'Failed NFS operation(code:-14)' $n times over all its rounds"
# fio's file on the share (stormark removes its own run directory).
[ -d "$OUT/export" ] && rm -f "$OUT/export/fio.bench"
true
