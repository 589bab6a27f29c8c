#!/usr/bin/env bash
# stormark's io_uring engine against fio's own peak tool, t/io_uring (issue 59): 4 KiB random
# reads of one file, one thread, alternating rounds, at each depth and each mode:
#   cached  the file pinned in the page cache (mmap + mlock by a process of its own: a host
#           whose DAMON evicts page cache within seconds would otherwise serve part of a
#           "cached" run from the disk), buffered reads: the engine and the CPU are the limit;
#   direct  O_DIRECT reads of the file on its disk: the device is the limit.
# t/io_uring runs with fixed buffers, registered files and its registered ring (-B1 -F1 -X1),
# no polling (-p0), batching SUBMIT I/Os a submission and COMPLETE a reap (its -s and -c, at
# most the depth), once without latency tracking (-t0, its peak) and once with it (-t1, the
# fair twin: stormark times and records every I/O). stormark runs twice: with fio's defaults
# (one I/O a submission, one completion a reap) and with the same batches as t/io_uring
# (--iodepth-batch, --iodepth-batch-complete). Prints each round's IOPS and the ratios of the
# medians; with perf, also each side's I/Os per CPU-second (its process's task-clock), the
# figure that holds on a machine other work shares: on an idle one the cached IOPS and these
# agree.
# Usage: bench/vs-t-io_uring.sh   (env: FIO_SRC=a fio source tree, or FIO_GIT=a fio git
#   repository to take HEAD from; ROUNDS=3, RUNTIME=5, DEPTHS="1 8 32 128",
#   MODES="cached direct", SUBMIT=8, COMPLETE=8, SIZE_MB=256, BENCH_DIR=./bench-data,
#   STORMARK=<binary>; without STORMARK the release binary is built; CPU=<list> or none: see
#   bench/cpus.sh, both tools run on the same CPU, the last one by default)
# Writes only a temporary directory inside $BENCH_DIR and removes it.
set -euo pipefail
ROUNDS=${ROUNDS:-3}; RUNTIME=${RUNTIME:-5}; DEPTHS=${DEPTHS:-1 8 32 128}
MODES=${MODES:-cached direct}; SUBMIT=${SUBMIT:-8}; COMPLETE=${COMPLETE:-8}
SIZE_MB=${SIZE_MB:-256}
if [ -z "${STORMARK:-}" ]; then
  cargo build --release -q -p stormark
  STORMARK=$PWD/target/release/stormark
fi
mkdir -p "${BENCH_DIR:-$PWD/bench-data}"
dir=$(mktemp -d "${BENCH_DIR:-$PWD/bench-data}/vs-t-io_uring.XXXX")
pin=
trap '[ -n "$pin" ] && kill "$pin" 2>/dev/null; rm -rf "$dir"' EXIT
# t/io_uring from fio's source: a tree given, or HEAD of a git repository given.
if [ -z "${FIO_SRC:-}" ]; then
  [ -n "${FIO_GIT:-}" ] || { echo "give FIO_SRC=<fio source tree> or FIO_GIT=<fio git repository>" >&2; exit 2; }
  mkdir "$dir/fio"
  git -C "$FIO_GIT" archive HEAD | tar -x -C "$dir/fio"
  FIO_SRC=$dir/fio
fi
if [ ! -x "$FIO_SRC/t/io_uring" ]; then
  (cd "$FIO_SRC" && ./configure --disable-native > /dev/null && make -j"$(nproc)" t/io_uring > /dev/null)
fi
TIO=$FIO_SRC/t/io_uring
source "$(dirname "$0")/cpus.sh"
pin_cpus 1
head -c $((SIZE_MB << 20)) /dev/urandom > "$dir/file"
sync "$dir/file"
# Each side's command under perf's task-clock where perf runs (its CPU time, all threads).
PERF=(); if perf stat -x, -e task-clock -o /dev/null true 2>/dev/null; then
  PERF=(perf stat -x, -e task-clock -o "$dir/cpu.txt"); fi
cpu_s() { if [ ${#PERF[@]} -gt 0 ]; then awk -F, '/task-clock/ {print $1 / 1000}' "$dir/cpu.txt"; else echo 0; fi; }
# "IOPS I/Os-per-CPU-second" of stormark's last run.
iops() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=[p for p in d["phases"] if p["kind"]=="run"][0]; c=float(sys.argv[2]); print(round(p["total"]["iops"]), round(p["total"]["ops"] / c) if c else 0)' "$1" "$(cpu_s)"; }
# t/io_uring prints one "IOPS=285.26K, ..." line a second from its second second on: their
# mean, and that mean over the whole run's seconds per CPU-second (its first second, which
# it does not print, burns CPU too).
tio_iops() {
  "${PERF[@]}" "${PIN[@]}" "$TIO" "$@" > "$dir/tio.txt" 2>&1
  python3 -c '
import re, sys
v = []
for line in open(sys.argv[1]):
    m = re.match(r"IOPS=([0-9.]+)([KM]?),", line)
    if m:
        v.append(float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6}[m.group(2)])
c = float(sys.argv[2])
mean = sum(v) / len(v) if v else 0
print(round(mean), round(mean * float(sys.argv[3]) / c) if c else 0)' "$dir/tio.txt" "$(cpu_s)" "$RUNTIME"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2)? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
pin_file() {
  python3 "$(dirname "$0")/pin.py" "$dir/file" &
  pin=$!
  sleep 2
}
echo "stormark: $("$STORMARK" --version)  t/io_uring: $FIO_SRC  cores: $(nproc), $(pinned)  file: ${SIZE_MB} MiB"
for mode in $MODES; do
  case $mode in
    cached) [ -n "$pin" ] || pin_file; odirect=0; smode=(--buffered --invalidate 0) ;;
    direct) if [ -n "$pin" ]; then kill "$pin"; wait "$pin" 2>/dev/null || true; pin=; fi
            odirect=1; smode=(--direct) ;;
    *) echo "unknown mode $mode (cached, direct)" >&2; exit 2 ;;
  esac
  for d in $DEPTHS; do
    s=$((SUBMIT < d ? SUBMIT : d)); c=$((COMPLETE < d ? COMPLETE : d))
    declare -A got=() cpu=()
    sides=("t0" "t1" "stormark" "stormark-batch")
    for r in $(seq "$ROUNDS"); do
      # The order turns by one each round, so no side always runs first.
      for i in $(seq 0 3); do
        side=${sides[$(((i + r) % 4))]}
        case $side in
          t0|t1) v=$(tio_iops -d"$d" -s"$s" -c"$c" -p0 -B1 -F1 -X1 -t"${side#t}" -O"$odirect" \
                       -n1 -r"$RUNTIME" "$dir/file") ;;
          stormark|stormark-batch)
            extra=(); [ "$side" = stormark-batch ] && extra=(--iodepth-batch "$s" --iodepth-batch-complete "$c")
            "${PERF[@]}" "${PIN[@]}" "$STORMARK" run "$dir/file" --engine io_uring --rw randread --bs 4k --iodepth "$d" \
              "${smode[@]}" "${extra[@]}" --time "${RUNTIME}s" -q --json "$dir/r.json" > /dev/null
            v=$(iops "$dir/r.json") ;;
        esac
        read -r v w <<< "$v"
        got[$side]+="$v "; cpu[$side]+="$w "
      done
    done
    declare -A med=() medc=()
    for side in "${sides[@]}"; do
      med[$side]=$(echo "${got[$side]}" | tr ' ' '\n' | grep . | median)
      medc[$side]=$(echo "${cpu[$side]}" | tr ' ' '\n' | grep . | median)
    done
    printf '%s depth %s (t/io_uring -s%s -c%s)\n' "$mode" "$d" "$s" "$c"
    for side in "${sides[@]}"; do
      printf '  %-15s IOPS %s median %s   I/Os per CPU-second %s median %s\n' \
        "$side" "${got[$side]}" "${med[$side]}" "${cpu[$side]}" "${medc[$side]}"
    done
    ratios() {
      local -n m=$1
      [ "${m[t0]}" != 0 ] || return 0
      printf '  %-19s stormark/t0 = %.3f  stormark/t1 = %.3f  stormark-batch/t0 = %.3f  stormark-batch/t1 = %.3f\n' \
        "$2" "$(echo "${m[stormark]} / ${m[t0]}" | bc -l)" "$(echo "${m[stormark]} / ${m[t1]}" | bc -l)" \
        "$(echo "${m[stormark-batch]} / ${m[t0]}" | bc -l)" "$(echo "${m[stormark-batch]} / ${m[t1]}" | bc -l)"
    }
    ratios med "IOPS:"
    ratios medc "per CPU-second:"
    unset got cpu med medc
  done
done
