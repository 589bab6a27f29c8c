// How much mdtest's full paths cost against a name under a held directory (issue 60): N
// empty files in the leaf of a D-deep directory chain, each stat'ed (then opened and closed)
// by its full path from the root, as mdtest does (stat("/dir/a/b/c/file.N")), and by its name
// under the leaf's descriptor, as stormark does (fstatat(leaf, "file.N")). Alternating
// ROUNDS times; prints calls per second of each and the ratio.
// Usage: path-walk DIR [FILES=20000] [DEPTH=3] [ROUNDS=5]
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: path-walk DIR [FILES] [DEPTH] [ROUNDS]\n"); return 2; }
  int files = argc > 2 ? atoi(argv[2]) : 20000, depth = argc > 3 ? atoi(argv[3]) : 3;
  int rounds = argc > 4 ? atoi(argv[4]) : 5;
  char leaf[4096], path[4096], name[64];
  snprintf(leaf, sizeof leaf, "%s", argv[1]);
  for (int d = 0; d < depth; d++) {
    size_t n = strlen(leaf);
    snprintf(leaf + n, sizeof leaf - n, "/mdtest_tree.%d", d);
    if (mkdir(leaf, 0755)) { perror(leaf); return 1; }
  }
  int fd = open(leaf, O_RDONLY | O_DIRECTORY);
  for (int i = 0; i < files; i++) {
    snprintf(name, sizeof name, "file.mdtest.0.%d", i);
    int f = openat(fd, name, O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (f < 0) { perror(name); return 1; }
    close(f);
  }
  double full[2] = {0, 0}, held[2] = {0, 0};
  struct stat st;
  for (int r = 0; r < rounds; r++) {
    for (int way = 0; way < 2; way++) {
      int mode = (r + way) % 2; // alternate which goes first
      for (int op = 0; op < 2; op++) {
        double t0 = now();
        for (int i = 0; i < files; i++) {
          snprintf(name, sizeof name, "file.mdtest.0.%d", i);
          if (mode == 0) {
            snprintf(path, sizeof path, "%s/%s", leaf, name);
            if (op == 0) { if (stat(path, &st)) return 1; }
            else { int f = open(path, O_RDONLY); if (f < 0) return 1; close(f); }
          } else {
            if (op == 0) { if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW)) return 1; }
            else { int f = openat(fd, name, O_RDONLY | O_NOFOLLOW); if (f < 0) return 1; close(f); }
          }
        }
        double t = now() - t0;
        if (mode == 0) full[op] += t; else held[op] += t;
      }
    }
  }
  const char *ops[2] = {"stat", "open+close"};
  printf("%d files, %d levels deep (%zu-byte paths), %d rounds\n", files, depth, strlen(leaf) + 1 + strlen(name), rounds);
  for (int op = 0; op < 2; op++) {
    double f = files * rounds / full[op], h = files * rounds / held[op];
    printf("%-10s full path %10.0f/s   name under held dir %10.0f/s   held/full %.2f\n", ops[op], f, h, h / f);
  }
  for (int i = 0; i < files; i++) {
    snprintf(name, sizeof name, "file.mdtest.0.%d", i);
    unlinkat(fd, name, 0);
  }
  close(fd);
  for (int d = depth - 1; d >= 0; d--) { rmdir(leaf); *strrchr(leaf, '/') = 0; }
  return 0;
}
