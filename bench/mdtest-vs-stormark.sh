#!/usr/bin/env bash
# stormark meta --mdtest against mdtest itself (issue 60), on the same filesystem, with the same
# arguments, alternating, ROUNDS rounds: mdtest's ranks (mpirun -np NP) are stormark's workers
# (--jobs NP). Prints each phase's median rate, the ratio stormark/mdtest, and each round.
# Usage: bench/mdtest-vs-stormark.sh [IOR_SOURCE]
#   IOR_SOURCE: a tree or a .tar.gz of hpc/ior's source (github.com/hpc/ior); mdtest is built
#   from it (bootstrap, configure, make) with Open MPI from Debian (openmpi-bin,
#   libopenmpi-dev, autoconf, automake: installed if missing). Or MDTEST names a built binary.
#   env: BENCH_DIR, ROUNDS=4 (each tool first in half of them), NP=2, ARGS='-n 10000 -z 2 -b 3 -u -F', MDTEST, STORMARK
# Then bench/path-walk.c: the cost of mdtest's full paths alone (stat and open by full path
# against by name under a held directory, as stormark does), the same files, alternating.
# Writes only inside $BENCH_DIR (default ./bench-data) and removes only what it created.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-4}
NP=${NP:-2}
ARGS=${ARGS:--n 10000 -z 2 -b 3 -u -F}
BENCH_DIR=${BENCH_DIR:-$PWD/bench-data}
if [ -z "${STORMARK:-}" ]; then
  cargo build --release --locked -q
  STORMARK=$PWD/target/release/stormark
fi
made_dir=no
[ -d "$BENCH_DIR" ] || { mkdir -p "$BENCH_DIR"; made_dir=yes; }
OUT=$(mktemp -d -p "$BENCH_DIR" mdtest.XXXX)
trap 'rm -rf "$OUT"; [ $made_dir = yes ] && rmdir "$BENCH_DIR" 2>/dev/null; true' EXIT
if [ -z "${MDTEST:-}" ]; then
  src=${1:?"give hpc/ior's source (a tree or a .tar.gz), or MDTEST=path/to/mdtest"}
  need=""
  for c in mpicc:libopenmpi-dev mpirun:openmpi-bin autoreconf:autoconf automake:automake make:make; do
    command -v "${c%%:*}" >/dev/null || need="$need ${c#*:}"
  done
  [ -z "$need" ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null; }
  mkdir "$OUT/ior"
  if [ -d "$src" ]; then cp -a "$src/." "$OUT/ior/"; else tar -xzf "$src" -C "$OUT/ior" --strip-components=1; fi
  (cd "$OUT/ior" && ./bootstrap && ./configure && make -C src mdtest) >"$OUT/build.log" 2>&1 \
    || { tail -20 "$OUT/build.log"; echo "mdtest did not build (log above)"; exit 1; }
  MDTEST=$OUT/ior/src/mdtest
fi
MPIRUN=(mpirun --oversubscribe -np "$NP")
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)
echo "stormark: $("$STORMARK" --version)  cores: $(nproc)  fs: $(df -T "$BENCH_DIR" | tail -1 | awk '{print $2}')"
echo "mdtest $ARGS  (mpirun -np $NP)  vs  stormark meta --jobs $NP --mdtest '$ARGS'"
for round in $(seq 1 "$ROUNDS"); do
  order="md sm"; [ $((round % 2)) = 0 ] && order="sm md"
  for tool in $order; do
    if [ $tool = md ]; then
      mkdir "$OUT/md"
      "${MPIRUN[@]}" "$MDTEST" $ARGS -d "$OUT/md" >"$OUT/$round.md.txt" 2>&1
      rm -rf "$OUT/md"
    else
      mkdir "$OUT/sm"
      "$STORMARK" meta "$OUT/sm" --jobs "$NP" --mdtest "$ARGS" -q --json "$OUT/$round.sm.json" >/dev/null 2>&1
      rmdir "$OUT/sm"
    fi
    # What one tool removed is written back before the other starts: else the second of a
    # round creates while the first one's deletes are committed (ext4: 10-fold slower).
    sync
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, re, sys, statistics
out, rounds = sys.argv[1], int(sys.argv[2])
# mdtest's SUMMARY rows (its mean over ranks) against stormark's phases.
phases = [('File creation', 'create'), ('File stat', 'stat'), ('File read', ('read', 'open')),
          ('File removal', 'delete'), ('Tree creation', 'mkdir'), ('Tree removal', 'rmdir')]
def md(row, r):
    for line in open(f'{out}/{r}.md.txt'):
        m = re.match(rf'\s*{row}\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)', line)
        if m:
            return float(m.group(3))
    return None
def sm(ops, r):
    d = json.load(open(f'{out}/{r}.sm.json'))
    for op in (ops if isinstance(ops, tuple) else (ops,)):
        for p in d['phases']:
            if p['name'] == op:
                return p['by_op'][op]['iops']
    return None
print(f"{'phase':14} {'mdtest ops/s':>13} {'stormark ops/s':>15} {'sm/mdtest':>10}   per round (mdtest/stormark)")
for row, ops in phases:
    f = [md(row, r) for r in range(1, rounds + 1)]
    s = [sm(ops, r) for r in range(1, rounds + 1)]
    if None in f or None in s or not statistics.median(f):
        continue
    name = ops if isinstance(ops, str) else '/'.join(ops)
    print(f"{row:14} {statistics.median(f):13.0f} {statistics.median(s):15.0f} "
          f"{statistics.median(s)/statistics.median(f):10.2f}   "
          + ' '.join(f'{a:.0f}/{b:.0f}' for a, b in zip(f, s)) + f"   ({name})")
PY
grep -m1 -o 'mdtest-[^ ]* was launched with [0-9]* total task(s)' "$OUT/1.md.txt" || true
cc -O2 -o "$OUT/path-walk" bench/path-walk.c
mkdir "$OUT/pw"
"$OUT/path-walk" "$OUT/pw" 20000 3 "$ROUNDS"
rmdir "$OUT/pw"
