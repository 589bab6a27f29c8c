#!/usr/bin/env bash
# Two stormark binaries on the same hot paths, alternating, ROUNDS rounds: the null engine
# (stormark's own cost per I/O) and 4 KiB random reads from a page-cached file with psync
# (fio's case a; the file pinned in the page cache), and 4 KiB random buffered writes (the
# write path). Prints each round's IOPS and the ratio B/A of the medians.
# Usage: bench/ab.sh A_BINARY B_BINARY   (env: ROUNDS=5, RUNTIME=4, BENCH_DIR=./bench-data,
#   CPU=<list> or none: see bench/cpus.sh, both binaries run on the same CPU, the last one by
#   default)
set -euo pipefail
A=$1; B=$2
ROUNDS=${ROUNDS:-5}; RUNTIME=${RUNTIME:-4}
dir=$(mktemp -d "${BENCH_DIR:-$PWD/bench-data}.ab.XXXX")
pin=
trap '[ -n "$pin" ] && kill "$pin" 2>/dev/null; rm -rf "$dir"' EXIT
iops() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(round([p for p in d["phases"] if p["kind"]=="run"][0]["total"]["iops"]))' "$1"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2)? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
declare -A got
# One 256 MiB file, read in place and kept in the page cache.
head -c $((256 << 20)) /dev/urandom > "$dir/file"
# Pinned (mmap + mlock, bench/pin.py): a host whose DAMON evicts page cache within seconds
# would serve part of the page-cached case from the disk, moving it by 20% between runs.
python3 "$(dirname "$0")/pin.py" "$dir/file" &
pin=$!
sleep 2
mkdir "$dir/w"
source "$(dirname "$0")/cpus.sh"
pin_cpus 1
echo "$(pinned)"
for case in null psync-cached psync-write; do
  for r in $(seq "$ROUNDS"); do
    for side in A B; do
      bin=${!side}
      case $case in
        null) args=(run "$dir" --engine null --rw randread --time "$RUNTIME" -q) ;;
        psync-cached) args=(run "$dir/file" --engine psync --rw randread --bs 4k --buffered --invalidate 0 --time "$RUNTIME" -q) ;;
        # Buffered 4 KiB random writes into a 64 MiB file the run makes: the write path.
        psync-write) args=(run "$dir/w" --engine psync --rw randwrite --bs 4k --size 64m --buffered --time "$RUNTIME" -q) ;;
      esac
      "${PIN[@]}" "$bin" "${args[@]}" --json "$dir/r.json" >/dev/null
      got[$case.$side]+="$(iops "$dir/r.json") "
    done
  done
  a=$(echo "${got[$case.A]}" | tr ' ' '\n' | grep . | median)
  b=$(echo "${got[$case.B]}" | tr ' ' '\n' | grep . | median)
  printf '%-14s A: %s\n%-14s B: %s\n%-14s median B/A = %.3f\n' "$case" "${got[$case.A]}" "" "${got[$case.B]}" "" "$(echo "$b / $a" | bc -l)"
done
