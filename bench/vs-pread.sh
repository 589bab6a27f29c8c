#!/usr/bin/env bash
# stormark's psync against a bare C loop of pread calls (issue 33): 4 KiB random reads of one
# page-cached file, 1 and 2 threads, alternating, ROUNDS rounds; prints each side's IOPS and the
# median ratio stormark/loop. The loop is what a benchmark cannot do less than: a random
# aligned offset, one pread, a count; it reads the clock once every 4096 I/Os to stop. stormark
# also times every I/O by its own start and end and records it in its histogram. A second
# loop makes the bare system call, as stormark's psync does, instead of glibc's pread (a
# cancellation point): both ratios are printed.
# Usage: bench/vs-pread.sh   (env: ROUNDS=3, RUNTIME=5, THREADS="1 2", SIZE_MB=256,
#   BENCH_DIR=./bench-data, STORMARK=<binary>; without STORMARK the release binary is built)
# Writes only a temporary directory inside $BENCH_DIR and removes it.
set -euo pipefail
ROUNDS=${ROUNDS:-3}; RUNTIME=${RUNTIME:-5}; THREADS=${THREADS:-1 2}; SIZE_MB=${SIZE_MB:-256}
if [ -z "${STORMARK:-}" ]; then
  cargo build --release -q -p stormark
  STORMARK=$PWD/target/release/stormark
fi
mkdir -p "${BENCH_DIR:-$PWD/bench-data}"
dir=$(mktemp -d "${BENCH_DIR:-$PWD/bench-data}/vs-pread.XXXX")
trap 'rm -rf "$dir"' EXIT
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
   and marks the thread cancellable around each call. */
#define pread(fd, buf, len, off) syscall(SYS_pread64, fd, buf, len, off)
#endif

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void *run(void *arg) {
  uint64_t x = 0x9E3779B97F4A7C15ull * ((uintptr_t)arg + 1), n = 0;
  int fd = open(path, O_RDONLY);
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
  int fd = open(path, O_RDONLY);
  blocks = lseek(fd, 0, SEEK_END) / 4096;
  close(fd);
  pthread_t t[64];
  double start = now();
  for (int i = 0; i < threads; i++) pthread_create(&t[i], 0, run, (void *)(uintptr_t)i);
  uint64_t total = 0;
  for (int i = 0; i < threads; i++) { void *r; pthread_join(t[i], &r); total += (uintptr_t)r; }
  printf("%.0f\n", total / (now() - start));
  return 0;
}
EOF
cc -O2 -pthread -o "$dir/loop" "$dir/loop.c"
cc -O2 -pthread -DRAW -o "$dir/loop-raw" "$dir/loop.c"
head -c $((SIZE_MB << 20)) /dev/urandom > "$dir/file"
cat "$dir/file" > /dev/null
iops() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(round([p for p in d["phases"] if p["kind"]=="run"][0]["total"]["iops"]))' "$1"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2)? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "stormark: $("$STORMARK" --version)  cores: $(nproc)  file: ${SIZE_MB} MiB, page-cached"
for n in $THREADS; do
  loop=(); raw=(); sm=()
  for r in $(seq "$ROUNDS"); do
    loop+=("$("$dir/loop" "$dir/file" "$RUNTIME" "$n")")
    raw+=("$("$dir/loop-raw" "$dir/file" "$RUNTIME" "$n")")
    "$STORMARK" run "$dir/file" --engine psync --rw randread --bs 4k --buffered --invalidate 0 \
      --jobs "$n" --time "${RUNTIME}s" -q --json "$dir/r.json" > /dev/null
    sm+=("$(iops "$dir/r.json")")
  done
  a=$(printf '%s\n' "${loop[@]}" | median)
  c=$(printf '%s\n' "${raw[@]}" | median)
  b=$(printf '%s\n' "${sm[@]}" | median)
  printf '%s thread(s)  loop: %s  loop with the bare system call: %s  stormark: %s\n' \
    "$n" "${loop[*]}" "${raw[*]}" "${sm[*]}"
  printf '  median stormark/loop = %.3f   stormark/bare-system-call loop = %.3f\n' \
    "$(python3 -c "print($b / $a)")" "$(python3 -c "print($b / $c)")"
done
