#!/usr/bin/env bash
# stormark's psync against a bare C loop of pread calls (issue 33): 4 KiB random reads of one
# page-cached file, 1 and 2 threads, alternating (the order turning each round), ROUNDS rounds; prints each side's IOPS and the
# median ratio stormark/loop. The loop is what a benchmark cannot do less than: a random
# aligned offset, one pread, a count; it reads the clock once every 4096 I/Os to stop. stormark
# also times every I/O by its own start and end and records it in its histogram. Both open the
# file O_NOATIME (as stormark and t/io_uring do: no access-time check per read). A second
# loop makes the bare system call, as stormark's psync does, instead of glibc's pread (a
# cancellation point), one inline syscall instruction on x86-64 as stormark's: both ratios are
# printed.
# The file is pinned in the page cache (mmap + mlock) for the whole run. With perf, each
# side's I/Os per CPU-second are printed too.
# Usage: bench/vs-pread.sh   (env: ROUNDS=3, RUNTIME=5, THREADS="1 2", SIZE_MB=256,
#   BENCH_DIR=./bench-data, STORMARK=<binary>; without STORMARK the release binary is built;
#   CPU=<list> or none: see bench/cpus.sh, every side of N threads runs on the same N CPUs,
#   the last N by default)
# Writes only a temporary directory inside $BENCH_DIR and removes it.
set -euo pipefail
ROUNDS=${ROUNDS:-3}; RUNTIME=${RUNTIME:-5}; THREADS=${THREADS:-1 2}; SIZE_MB=${SIZE_MB:-256}
if [ -z "${STORMARK:-}" ]; then
  cargo build --release -q -p stormark
  STORMARK=$PWD/target/release/stormark
fi
mkdir -p "${BENCH_DIR:-$PWD/bench-data}"
dir=$(mktemp -d "${BENCH_DIR:-$PWD/bench-data}/vs-pread.XXXX")
pin=
trap '[ -n "$pin" ] && kill "$pin" 2>/dev/null; rm -rf "$dir"' EXIT
cat > "$dir/loop.c" <<'EOF'
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char *path;
static double seconds;
static uint64_t blocks;

#ifdef RAW
/* The system call itself, as stormark's psync makes it: glibc's pread is a cancellation point
   and marks the thread cancellable around each call, and libc's variadic syscall() cost
   stormark's psync 11% of a page-cached read (docs/performance.md). On x86-64 one inline
   syscall instruction, as stormark's; libc's syscall() elsewhere. */
#if defined(__x86_64__)
static inline long raw_pread(long fd, void *buf, long len, long off) {
  long ret;
  register long r10 __asm__("r10") = off;
  __asm__ volatile("syscall" : "=a"(ret) : "0"((long)SYS_pread64), "D"(fd), "S"(buf), "d"(len), "r"(r10)
                   : "rcx", "r11", "memory");
  return ret;
}
#define pread(fd, buf, len, off) raw_pread(fd, buf, len, off)
#else
#define pread(fd, buf, len, off) syscall(SYS_pread64, fd, buf, len, off)
#endif
#endif

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void *run(void *arg) {
  uint64_t x = 0x9E3779B97F4A7C15ull * ((uintptr_t)arg + 1), n = 0;
  int fd = open(path, O_RDONLY | O_NOATIME); if (fd < 0) fd = open(path, O_RDONLY);
  char *buf = aligned_alloc(4096, 4096);
  if (fd < 0 || !buf) { perror("open"); exit(1); }
  double end = now() + seconds;
  for (;;) {
    for (int i = 0; i < 4096; i++) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      if (pread(fd, buf, 4096, (off_t)((x % blocks) * 4096)) != 4096) { perror("pread"); exit(1); }
    }
    n += 4096;
    if (now() >= end) break;
  }
  return (void *)(uintptr_t)n;
}

int main(int argc, char **argv) {
  path = argv[1]; seconds = atof(argv[2]); int threads = atoi(argv[3]);
  int fd = open(path, O_RDONLY | O_NOATIME); if (fd < 0) fd = open(path, O_RDONLY);
  blocks = lseek(fd, 0, SEEK_END) / 4096;
  close(fd);
  pthread_t t[64];
  double start = now();
  for (int i = 0; i < threads; i++) pthread_create(&t[i], 0, run, (void *)(uintptr_t)i);
  uint64_t total = 0;
  for (int i = 0; i < threads; i++) { void *r; pthread_join(t[i], &r); total += (uintptr_t)r; }
  printf("%.0f %llu\n", total / (now() - start), (unsigned long long)total);
  return 0;
}
EOF
cc -O2 -pthread -o "$dir/loop" "$dir/loop.c"
cc -O2 -pthread -DRAW -o "$dir/loop-raw" "$dir/loop.c"
head -c $((SIZE_MB << 20)) /dev/urandom > "$dir/file"
# Held in the page cache for the whole run, mapped and locked by a process of its own: a host
# whose DAMON evicts page cache within seconds would otherwise serve part of each side's
# "cached" reads from the disk.
python3 "$(dirname "$0")/pin.py" "$dir/file" &
pin=$!
sleep 2
# Each side under perf's task-clock where perf runs: its I/Os per CPU-second (all its
# threads), the figure that holds on a machine other work shares.
PERF=(); if perf stat -x, -e task-clock -o /dev/null true 2>/dev/null; then
  PERF=(perf stat -x, -e task-clock -o "$dir/cpu.txt"); fi
cpu_s() { if [ ${#PERF[@]} -gt 0 ]; then awk -F, '/task-clock/ {print $1 / 1000}' "$dir/cpu.txt"; else echo 0; fi; }
per_cpu() { python3 -c 'import sys; c=float(sys.argv[2]); print(round(float(sys.argv[1]) / c) if c else 0)' "$1" "$(cpu_s)"; }
# "IOPS I/Os-per-CPU-second" of a loop's line ("IOPS I/Os") or stormark's last run.
loop_side() { local out; out=$("${PERF[@]}" "${PIN[@]}" "$@"); set -- $out; echo "$1 $(per_cpu "$2")"; }
iops() { local v; v=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=[p for p in d["phases"] if p["kind"]=="run"][0]["total"]; print(round(t["iops"]), t["ops"])' "$1"); set -- $v; echo "$1 $(per_cpu "$2")"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2)? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "stormark: $("$STORMARK" --version)  cores: $(nproc)  file: ${SIZE_MB} MiB, page-cached"
col() { printf '%s\n' "$@" | awk -v k="$K" '{print $k}'; }
source "$(dirname "$0")/cpus.sh"
for n in $THREADS; do
  pin_cpus "$n"
  loop=(); raw=(); sm=()
  for r in $(seq "$ROUNDS"); do
    # The order turns by one each round, so that no side always runs first (or last).
    for i in 0 1 2; do
      case $(((i + r) % 3)) in
        0) loop+=("$(loop_side "$dir/loop" "$dir/file" "$RUNTIME" "$n")") ;;
        1) raw+=("$(loop_side "$dir/loop-raw" "$dir/file" "$RUNTIME" "$n")") ;;
        2) "${PERF[@]}" "${PIN[@]}" "$STORMARK" run "$dir/file" --engine psync --rw randread --bs 4k --buffered \
             --invalidate 0 --jobs "$n" --time "${RUNTIME}s" -q --json "$dir/r.json" > /dev/null
           sm+=("$(iops "$dir/r.json")") ;;
      esac
    done
  done
  for K in 1 2; do
    a=$(col "${loop[@]}" | median); c=$(col "${raw[@]}" | median); b=$(col "${sm[@]}" | median)
    [ "$a" != 0 ] || continue
    what=IOPS; [ "$K" = 2 ] && what="I/Os per CPU-second"
    printf '%s thread(s) (%s), %s  loop: %s  loop with the bare system call: %s  stormark: %s\n' \
      "$n" "$(pinned)" "$what" "$(col "${loop[@]}" | tr '\n' ' ')" "$(col "${raw[@]}" | tr '\n' ' ')" "$(col "${sm[@]}" | tr '\n' ' ')"
    printf '  median stormark/loop = %.3f   stormark/bare-system-call loop = %.3f\n' \
      "$(python3 -c "print($b / $a)")" "$(python3 -c "print($b / $c)")"
  done
done
