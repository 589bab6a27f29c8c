#!/usr/bin/env bash
# stormark against fio, same file, same workload, alternating, ROUNDS rounds; prints the
# ratios stormark/fio and peak memory. Targets (issue 2, 2-core machine):
#   a) 4 KiB random reads, page-cached 512 MiB file, buffered, psync, 1 and 2 jobs: IOPS >= 1.0x
#   b) 4 KiB random reads, direct, io_uring, iodepth 32: IOPS >= 0.97x, p50/p99 within 10%
#   c) 1 MiB sequential read and write, direct: bandwidth >= 0.97x
#   stormark peak RSS <= 64 MiB.
# Usage: bench/vs-fio.sh [--quick]
#   env: BENCH_DIR, ROUNDS, RUNTIME, ONLY=<case prefix>, FIO=<fio binary>, STORMARK=<binary>
#   (with STORMARK set nothing is built; without /usr/bin/time peak memory is not measured),
#   CPU=<list> or none (bench/cpus.sh: both tools of a case of N jobs run on the same N CPUs,
#   the last N by default)
# Writes only inside $BENCH_DIR (default ./bench-data, on the current filesystem, since /tmp may
# be tmpfs without O_DIRECT) and removes only what it created there.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-8}
if [ "${1:-}" = "--quick" ]; then ROUNDS=1; RUNTIME=3; fi
BENCH_DIR=${BENCH_DIR:-$PWD/bench-data}

FIO=${FIO:-fio}
if ! command -v "$FIO" >/dev/null; then
  echo "installing fio"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio >/dev/null
fi
if [ ! -x /usr/bin/time ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null || true
fi
if [ -z "${STORMARK:-}" ]; then
  cargo build --release --locked -q
  STORMARK=$PWD/target/release/stormark
fi
SM=$STORMARK
# Peak RSS through GNU time where it exists.
timed() { local out=$1; shift; if [ -x /usr/bin/time ]; then /usr/bin/time -f %M -o "$out" "$@"; else echo 0 >"$out"; "$@"; fi; }

made_dir=no
[ -d "$BENCH_DIR" ] || { mkdir -p "$BENCH_DIR"; made_dir=yes; }
OUT=$(mktemp -d -p "$BENCH_DIR" results.XXXX)
FILE=$(mktemp -p "$BENCH_DIR" bench.XXXX.dat)
cleanup() { rm -rf "$OUT"; rm -f "$FILE"; [ $made_dir = yes ] && rmdir "$BENCH_DIR" 2>/dev/null; true; }
trap cleanup EXIT
echo "fio: $("$FIO" --version)  stormark: $("$SM" --version)  cores: $(nproc)  target: $(df -hT "$BENCH_DIR" 2>/dev/null | tail -1 | awk '{print $1, $2}')"
dd if=/dev/urandom of="$FILE" bs=1M count=512 status=none
sync

# name | fio options | stormark options | page cache warm?
CASES=(
  "a-randread-4k-cached-1job|--rw=randread --bs=4k --ioengine=psync --direct=0 --invalidate=0 --numjobs=1|--rw randread --bs 4k --engine psync --buffered --invalidate 0 --jobs 1|warm"
  "a-randread-4k-cached-2jobs|--rw=randread --bs=4k --ioengine=psync --direct=0 --invalidate=0 --numjobs=2|--rw randread --bs 4k --engine psync --buffered --invalidate 0 --jobs 2|warm"
  "b-randread-4k-direct-qd32|--rw=randread --bs=4k --ioengine=io_uring --direct=1 --iodepth=32 --numjobs=1|--rw randread --bs 4k --engine io_uring --direct --iodepth 32 --jobs 1|cold"
  "c-seqread-1m-direct|--rw=read --bs=1M --ioengine=io_uring --direct=1 --iodepth=1 --numjobs=1|--rw read --bs 1m --engine io_uring --direct --iodepth 1 --jobs 1|cold"
  "c-seqwrite-1m-direct|--rw=write --bs=1M --ioengine=io_uring --direct=1 --iodepth=1 --numjobs=1|--rw write --bs 1m --engine io_uring --direct --iodepth 1 --jobs 1 --allow-overwrite|cold"
)

source bench/cpus.sh
for round in $(seq 1 "$ROUNDS"); do
  for c in "${CASES[@]}"; do
    IFS='|' read -r name fio_opts sm_opts cache <<<"$c"
    case "$name" in "${ONLY:-}"*) ;; *) continue ;; esac
    jobs=$(grep -o -- '--jobs [0-9]*' <<<"$sm_opts" | awk '{print $2}')
    pin_cpus "${jobs:-1}"
    [ "$round" = 1 ] && echo "$name: $(pinned)"
    if [ "$cache" = warm ]; then cat "$FILE" >/dev/null; fi
    # Alternate which tool goes first, so neither always gets the warmer machine.
    order="fio sm"; [ $((round % 2)) = 0 ] && order="sm fio"
    for tool in $order; do
      if [ "$tool" = fio ]; then
        # norandommap: uniform random offsets with repeats, as stormark draws them.
        timed "$OUT/$name.$round.fio.rss" "${PIN[@]}" "$FIO" --name=bench --filename="$FILE" --size=512m \
          $fio_opts --time_based --runtime="$RUNTIME" --norandommap --randrepeat=0 --group_reporting \
          --lat_percentiles=1 --output-format=json --output="$OUT/$name.$round.fio.json" >/dev/null
      else
        timed "$OUT/$name.$round.sm.rss" "${PIN[@]}" "$SM" run "$FILE" --size 512m $sm_opts \
          --time "${RUNTIME}s" --quiet --json "$OUT/$name.$round.sm.json" >/dev/null
      fi
    done
  done
done

python3 - "$OUT" "$ROUNDS" <<'PY'
import json, sys, statistics, glob, os
out, rounds = sys.argv[1], int(sys.argv[2])
names = sorted({os.path.basename(p).split('.')[0] for p in glob.glob(out + '/*.json')})
if not names:
    sys.exit("no results: did every run fail?")
def fio(path):
    d = json.load(open(path)); j = d['jobs'][0]
    op = 'write' if j['write']['io_bytes'] > 0 else 'read'
    s = j[op]; pct = s['lat_ns']['percentile']
    return s['iops'], s['bw_bytes'], pct['50.000000'], pct['99.000000']
def sm(path):
    d = json.load(open(path)); p = [p for p in d['phases'] if p['name'] == 'run'][0]
    op = 'write' if 'write' in p['by_op'] else 'read'; s = p['by_op'][op]
    return s['iops'], s['bw_bytes_per_s'], s['latency_ns']['p50'], s['latency_ns']['p99']
def rss(path): return int(open(path).read().split()[-1]) / 1024
print(f"{'case':30} {'fio IOPS':>10} {'sm IOPS':>10} {'ratio':>6} {'p50 f/s us':>13} {'p99 f/s us':>15} {'sm RSS MiB':>10}")
for n in names:
    f = [fio(f'{out}/{n}.{r}.fio.json') for r in range(1, rounds + 1)]
    s = [sm(f'{out}/{n}.{r}.sm.json') for r in range(1, rounds + 1)]
    m = lambda xs, i: statistics.mean(x[i] for x in xs)
    ratios = [b[0] / a[0] for a, b in zip(f, s)]
    peak = max(rss(f'{out}/{n}.{r}.sm.rss') for r in range(1, rounds + 1))
    print(f"{n:30} {m(f,0):10.0f} {m(s,0):10.0f} {statistics.mean(ratios):6.3f} "
          f"{m(f,2)/1e3:6.1f}/{m(s,2)/1e3:<6.1f} {m(f,3)/1e3:7.1f}/{m(s,3)/1e3:<7.1f} {peak:10.1f}"
          f"   (per round: {' '.join(f'{r:.3f}' for r in ratios)})")
PY
