#!/usr/bin/env bash
# The same fio job files run by fio and by stormark (issue 22), alternating, ROUNDS rounds:
# 4 KiB random reads (libaio, direct, depth 32, 2 jobs); a 70/30 8 KiB mix over 8 files per job;
# 1 MiB sequential writes, then (stonewall) reads. Each file is written once, with ${SIZE},
# ${RUNTIME} and ${JOBDIR} that both tools expand from the environment, and given unchanged to
# `fio FILE` and `stormark run FILE`. Prints each file's IOPS per round (the sum over its
# groups) and the ratio stormark/fio of the medians; docs/performance.md records a run.
# Usage: bench/fiofile-vs-fio.sh   (env: BENCH_DIR, ROUNDS=3, SIZE=512m, RUNTIME=10, FIO, STORMARK,
#        CASES="randread mixed seq")
# Writes only inside $BENCH_DIR (default ./bench-data) and removes only what it created.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
export SIZE=${SIZE:-512m} RUNTIME=${RUNTIME:-10}
. bench/fio-side.sh
fio_side fiofile
mkdir "$OUT/jobs" "$OUT/fio" "$OUT/sm"
cat > "$OUT/jobs/randread.fio" <<'FIO'
[global]
directory=${JOBDIR}
ioengine=libaio
direct=1
size=${SIZE}
runtime=${RUNTIME}
time_based
group_reporting

[randread]
rw=randread
bs=4k
iodepth=32
numjobs=2
FIO
cat > "$OUT/jobs/mixed.fio" <<'FIO'
[global]
directory=${JOBDIR}
ioengine=libaio
direct=1
nrfiles=8
size=${SIZE}
runtime=${RUNTIME}
time_based
group_reporting

[mixed]
rw=randrw
rwmixread=70
bs=8k
iodepth=8
numjobs=2
FIO
cat > "$OUT/jobs/seq.fio" <<'FIO'
[global]
directory=${JOBDIR}
ioengine=libaio
direct=1
bs=1M
iodepth=16
size=${SIZE}
runtime=${RUNTIME}
time_based

[seq-write]
rw=write

[seq-read]
stonewall
rw=read
FIO
iops() { # tool json
  python3 - "$1" "$2" <<'PY'
import json, sys
tool, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
if tool == "fio":
    print(sum(j["read"]["iops"] + j["write"]["iops"] for j in d["jobs"]))
else:
    print(sum(p["total"]["iops"] for p in d["phases"] if p.get("kind") != "prepare"))
PY
}
for job in ${CASES:-randread mixed seq}; do
  : > "$OUT/$job.fio.txt"; : > "$OUT/$job.sm.txt"
  for round in $(seq 1 "$ROUNDS"); do
    order="fio sm"; [ $((round % 2)) = 0 ] && order="sm fio"
    for tool in $order; do
      if [ $tool = fio ]; then
        JOBDIR="$OUT/fio" "$FIO" --output-format=json --output="$OUT/r.json" "$OUT/jobs/$job.fio" >/dev/null
        rm -rf "$OUT/fio"; mkdir "$OUT/fio"
      else
        JOBDIR="$OUT/sm" "$STORMARK" run "$OUT/jobs/$job.fio" -q --json "$OUT/r.json" >/dev/null
      fi
      v=$(iops $tool "$OUT/r.json")
      echo "$v" >> "$OUT/$job.$tool.txt"
      printf '%-9s round %s  %-8s %12.0f IOPS\n' "$job" "$round" "$tool" "$v"
    done
  done
  python3 - "$job" "$OUT/$job.fio.txt" "$OUT/$job.sm.txt" <<'PY'
import statistics, sys
job, f, s = sys.argv[1], [float(x) for x in open(sys.argv[2])], [float(x) for x in open(sys.argv[3])]
mf, ms = statistics.median(f), statistics.median(s)
print(f"{job}: fio median {mf:.0f} IOPS, stormark median {ms:.0f} IOPS, stormark/fio {ms / mf:.3f}x")
PY
done
