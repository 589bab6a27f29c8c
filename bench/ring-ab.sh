#!/usr/bin/env bash
# Two stormark binaries on the io_uring engine, alternating, ROUNDS rounds: 4 KiB random reads
# at depth 32, one worker, from a 256 MiB file pinned in the page cache (mmap + mlock: this
# host's DAMON evicts unpinned cache within seconds), A as it is, B as it is and B with fio's
# fixedbufs and registerfiles (--fixedbufs --registerfiles). Prints each round's IOPS and the
# ratios of the medians to A's.
# Usage: bench/ring-ab.sh A_BINARY B_BINARY   (env: ROUNDS=5, RUNTIME=4, BENCH_DIR=./bench-data)
set -euo pipefail
A=$1; B=$2
ROUNDS=${ROUNDS:-5}; RUNTIME=${RUNTIME:-4}
dir=$(mktemp -d "${BENCH_DIR:-$PWD/bench-data}.ring.XXXX")
pin=
trap '[ -n "$pin" ] && kill "$pin" 2>/dev/null; rm -rf "$dir"' EXIT
iops() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(round([p for p in d["phases"] if p["kind"]=="run"][0]["total"]["iops"]))' "$1"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2)? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
head -c $((256 << 20)) /dev/urandom > "$dir/file"
# Held in the page cache for the whole run: mapped and locked by a process of its own.
python3 "$(dirname "$0")/pin.py" "$dir/file" &
pin=$!
sleep 2
declare -A got
args=(run "$dir/file" --engine io_uring --rw randread --bs 4k --iodepth 32 --buffered --invalidate 0 --time "$RUNTIME" -q)
for r in $(seq "$ROUNDS"); do
  for side in A B B+reg; do
    case $side in
      A) "$A" "${args[@]}" --json "$dir/r.json" >/dev/null ;;
      B) "$B" "${args[@]}" --json "$dir/r.json" >/dev/null ;;
      B+reg) "$B" "${args[@]}" --fixedbufs --registerfiles --json "$dir/r.json" >/dev/null ;;
    esac
    got[$side]+="$(iops "$dir/r.json") "
  done
done
a=$(echo "${got[A]}" | tr ' ' '\n' | grep . | median)
for side in A B B+reg; do
  m=$(echo "${got[$side]}" | tr ' ' '\n' | grep . | median)
  printf '%-6s %s median %s  /A = %.3f\n' "$side" "${got[$side]}" "$m" "$(echo "$m / $a" | bc -l)"
done
