#!/usr/bin/env bash
# How much code the io_uring loop runs per I/O, counted by callgrind (issue 59): page-cached
# 4 KiB random reads at depth 32, batched 8 and 8 (bench/vs-t-io_uring.sh's case), four passes
# over a 256 MiB file. Prints, for stormark's own code, the 64-byte code lines executed at
# least once every 8 I/Os (the loop's hot lines: each one the loop runs evicts a line of the
# kernel's code from the instruction cache, docs/performance.md) and the instructions per
# I/O in them, per function. Counted, not timed: the host's load does not move it.
# Usage: bench/loop-lines.sh [BINARY...]   (env: BENCH_DIR=./bench-data, RW=randread;
#   without a binary the release build is built; needs valgrind)
set -euo pipefail
command -v valgrind > /dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 2; }
if [ $# -eq 0 ]; then
  cargo build --release -q -p stormark
  set -- "$PWD/target/release/stormark"
fi
mkdir -p "${BENCH_DIR:-$PWD/bench-data}"
dir=$(mktemp -d "${BENCH_DIR:-$PWD/bench-data}/loop-lines.XXXX")
trap 'rm -rf "$dir"' EXIT
head -c $((256 << 20)) /dev/urandom > "$dir/file"
for bin in "$@"; do
  valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$dir/cg.out" \
    "$bin" run "$dir/file" --engine io_uring --rw "${RW:-randread}" --bs 4k --iodepth 32 \
    --buffered --invalidate 0 --iodepth-batch 8 --iodepth-batch-complete 8 --size 256m --loops 4 -q \
    --json "$dir/r.json" > "$dir/cg.log" 2>&1
  echo "== $bin"
  python3 - "$dir/cg.out" "$dir/r.json" "$bin" <<'EOF'
import bisect, collections, json, os, re, subprocess, sys
out, res, binary = sys.argv[1:4]
binary = os.path.realpath(binary)
phase = [p for p in json.load(open(res))["phases"] if p["kind"] == "run"][0]
n = phase["total"]["ops"]
# callgrind's format with --dump-instr: "ADDR LINE COST" after ob= (object) lines; a
# "calls=" line is followed by the call's inclusive cost, left out here.
names, obj, after_call, addr = {}, None, False, 0
ir = collections.Counter()
for line in open(out):
    m = re.match(r"(c?)ob=\((\d+)\)(?: (.*))?", line)
    if m:
        if m.group(3):
            names[m.group(2)] = m.group(3).strip()
        if not m.group(1):
            obj = names.get(m.group(2))
        continue
    if line.startswith("calls="):
        after_call = True
        continue
    m = re.match(r"(0x[0-9a-f]+|[+-]\d+|\*)\s+\S+\s+(\d+)", line)
    if not m:
        continue
    a = m.group(1)
    addr = int(a, 16) if a.startswith("0x") else addr + int(a) if a != "*" else addr
    if after_call:
        after_call = False
        continue
    if obj and os.path.realpath(obj) == binary:
        ir[addr] += int(m.group(2))
by_line, first = collections.Counter(), {}
for a, c in ir.items():
    by_line[a // 64] += c
    first[a // 64] = min(a, first.get(a // 64, a))
hot = {l: c for l, c in by_line.items() if c >= n / 8}
syms = []
for s in subprocess.run(["nm", "-C", "--defined-only", binary], capture_output=True, text=True).stdout.splitlines():
    p = s.split(" ", 2)
    if len(p) == 3 and p[1] in "tTwW":
        syms.append((int(p[0], 16), p[2]))
syms.sort()
lines, instrs = collections.Counter(), collections.Counter()
for l, c in hot.items():
    i = bisect.bisect_right(syms, (first[l], "\uffff")) - 1
    name = syms[i][1] if i >= 0 else "?"
    lines[name] += 1
    instrs[name] += c
print(f"{n} I/Os; hot code lines {len(hot)}, {sum(hot.values()) / n:.1f} instructions an I/O in them")
for name, c in instrs.most_common(6):
    print(f"  {lines[name]:3d} lines {c / n:7.1f} instructions an I/O  {name[:90]}")
EOF
done
