#!/usr/bin/env bash
# The same fio job files run by fio and by stormark (issue 22), alternating, ROUNDS rounds:
# 4 KiB random reads (libaio, direct, depth 32, 2 jobs); a 70/30 8 KiB mix over 8 files per job;
# 1 MiB sequential writes, then (stonewall) reads. Each file is written once, with ${SIZE},
# ${RUNTIME} and ${JOBDIR} that both tools expand from the environment, and given unchanged to
# `fio FILE` and `stormark run FILE`. Prints each file's IOPS per round (the sum over its
# groups) and the ratio stormark/fio of the medians; docs/performance.md records a run.
# Usage: bench/fiofile-vs-fio.sh   (env: BENCH_DIR, ROUNDS=3, SIZE=512m, RUNTIME=10, FIO, STORMARK,
#        CASES="randread mixed seq", or CASES=corpus for every runnable file of tests/fio/corpus,
#        CASES=examples for every runnable file of fio's examples in tests/fio/examples,
#        ONLY=REGEX of its names, FROM=NAME to start there)
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
if tool == "fio":
    # fio may print notes before its JSON; unified_rw_reporting=mixed reports one "mixed".
    text = open(path).read()
    d = json.loads(text[text.index("{"):])
    print(sum(sum(j[k]["iops"] for k in ("read", "write", "trim", "mixed") if k in j) for j in d["jobs"]))
else:
    d = json.load(open(path))
    print(sum(p["total"]["iops"] for p in d["phases"] if p.get("kind") != "prepare"))
PY
}
# CASES=corpus: every job file of tests/fio/corpus that runs, normalized for both tools alike:
# the size, time and place lines of every section replaced by SIZE, RUNTIME (time_based, no
# ramp or start delay) and a place in $OUT (the file's own shared file there, or a 1 GiB file of data
# for a file made for a device), with the variables its VERDICTS line names.
normalize() { # shape out dir dev_or_empty
  python3 - "$@" <<'PY'
import os, re, sys
src, out, jobdir, dev = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
# The file's own flags from VERDICTS (--size=128m, --iodepth=4) for both tools alike.
flags = dict(f[2:].replace("-", "_").split("=", 1) for f in sys.argv[5:] if f.startswith("--") and "=" in f)
if "size" in flags:
    os.environ["SIZE"] = flags.pop("size")
for k in ("time", "ramp", "startdelay"):
    flags.pop(k, None)
drop = re.compile(r"^(size|io_size|io_limit|runtime|timeout|ramp_time|startdelay|time_based|"
                  r"loops|number_ios|directory|filename|offset|offset_increment|steadystate\w*|ss\w*|"
                  r"write_\w+_log|log_avg_msec|per_job_logs)\b")
lines = [l.rstrip("\n") for l in open(src) if not l.startswith("#")]
# One shared file, unless the file asks for several per job (fio asserts on nrfiles with one
# filename).
several = any(re.match(r"^(nrfiles|nr_files)=([2-9]|\d\d)", l.strip()) for l in lines)
# fio's examples name a device or a file of their own (datafile.tmp, /dev/sda): one name used by
# every job that names one is that shared file too.
named = {l.strip().split("=", 1)[1].split(";")[0].strip() for l in lines
         if l.strip().startswith("filename=")}
shared = (named == {"data"} or (len(named) == 1 and os.environ.get("EXAMPLES"))) and not several
place = f"filename={dev}" if dev else (f"filename={jobdir}/data" if shared else f"directory={jobdir}")
head = ["[global]", place, "size=" + os.environ["SIZE"], "runtime=" + os.environ["RUNTIME"],
        "time_based=1", "ramp_time=0"]
def size(text):
    m = re.match(r"^(\d+)\s*([kmgt]?)i?b?$", text.strip().lower())
    return int(m.group(1)) << (10 * " kmgt".index(m.group(2) or " ")) if m else None
cap = size(os.environ["SIZE"])
def capped(l):
    # Each file's own size (filesize) stays, at most SIZE.
    k, _, v = l.strip().partition("=")
    if k == "filesize" and size(v) and size(v) > cap:
        return "filesize=" + os.environ["SIZE"]
    return l
def flagged(l):
    k = l.strip().partition("=")[0]
    return f"{k}={flags[k]}" if k in flags else l
body = [flagged(capped(l)) for l in lines if not drop.match(l.strip())]
# Offsets the VERDICTS line gives (the file's own are dropped above, being a drive's): at the
# end, in the last job's section, for both tools.
body += [f"{k}={flags[k]}" for k in ("offset", "offset_increment") if k in flags]
open(out, "w").write("\n".join(head + body) + "\n")
PY
}
if [ "${CASES:-}" = corpus ] || [ "${CASES:-}" = examples ]; then
  CORPUS=tests/fio/$CASES
  truncate -s 0 "$OUT/summary.txt"
  # fio's examples have no target column: every one runs on files here.
  [ "$CASES" = examples ] && export EXAMPLES=1
  grep -v '^#' "$CORPUS/VERDICTS" | grep -E ' runs( |$)' | grep -E "^${ONLY:-.}" |
    if [ "$CASES" = examples ]; then sed 's/ runs/ runs files/'; else cat; fi |
    while read -r name _ target rest; do
    [[ "$name" < "${FROM:-}" ]] && continue
    vars=$(printf '%s\n' $rest | grep -v '^--' | tr '\n' ' ' || true)
    dev=""; [ "$target" = device ] && { dev="$OUT/device"; [ -f "$dev" ] || head -c 1G /dev/urandom > "$dev"; }
    for tool in fio sm; do
      normalize "$CORPUS/$name" "$OUT/jobs/$tool-$name" "$OUT/$tool" "$dev" $(printf '%s\n' $rest | grep '^--' || true)
    done
    : > "$OUT/c.fio.txt"; : > "$OUT/c.sm.txt"
    for round in $(seq 1 "$ROUNDS"); do
      order="fio sm"; [ $((round % 2)) = 0 ] && order="sm fio"
      for tool in $order; do
        rm -rf "$OUT/fio" "$OUT/sm"; mkdir "$OUT/fio" "$OUT/sm"
        if [ $tool = fio ]; then
          # fio's zoned mode takes the zones of a file that is there (it makes none).
          if grep -q '^zonemode=zbd' "$OUT/jobs/fio-$name"; then
            truncate -s "$(grep -m1 '^size=' "$OUT/jobs/fio-$name" | cut -d= -f2)" "$OUT/fio/data"
          fi
          # From inside $OUT: fio leaves its verify state files (local-*-verify.state) where it runs.
          # fio 3.33 hangs on io_submit_mode=offload with time_based: bounded.
          (cd "$OUT" && env $vars timeout -s KILL $((RUNTIME * 12 + 60)) "$FIO" --output-format=json --output="$OUT/r.json" "$OUT/jobs/fio-$name") >/dev/null 2>&1 || echo '{"jobs":[]}' > "$OUT/r.json"
        else
          # A job checking another's blocks (fio's do_verify on a read job) needs a run
          # directory: the shared file's directory as TARGET, the jobs sharing their file of
          # that name there. Otherwise the shared file itself is the target, as fio's.
          on=(); [ -n "${EXAMPLES:-}" ] && grep -q "^do_verify=1" "$OUT/jobs/sm-$name" && on=("$OUT/sm")
          env $vars "$STORMARK" run "${on[@]}" --job "$OUT/jobs/sm-$name" --allow-overwrite -q --json "$OUT/r.json" >"$OUT/sm.log" 2>&1 || tail -1 "$OUT/sm.log" >&2
        fi
        iops $tool "$OUT/r.json" >> "$OUT/c.$tool.txt" 2>/dev/null || echo 0 >> "$OUT/c.$tool.txt"
      done
    done
    python3 - "$name" "$OUT/c.fio.txt" "$OUT/c.sm.txt" <<'PY' | tee -a "$OUT/summary.txt"
import statistics, sys
name, f, s = sys.argv[1], [float(x) for x in open(sys.argv[2])], [float(x) for x in open(sys.argv[3])]
mf, ms = statistics.median(f), statistics.median(s)
ratio = ms / mf if mf else float("nan")
flag = "" if 0.85 <= ratio <= 1.15 else "  OUTSIDE 0.85-1.15"
print(f"{name:28s} fio {mf:10.0f}  stormark {ms:10.0f}  {ratio:6.3f}x{flag}")
PY
  done
  awk '/x/ {n++} /OUTSIDE/ {o++} END {printf "%d files, %d outside 0.85-1.15\n", n, o}' "$OUT/summary.txt"
  exit 0
fi
for job in ${CASES:-randread mixed seq}; do
  : > "$OUT/$job.fio.txt"; : > "$OUT/$job.sm.txt"
  for round in $(seq 1 "$ROUNDS"); do
    order="fio sm"; [ $((round % 2)) = 0 ] && order="sm fio"
    for tool in $order; do
      if [ $tool = fio ]; then
        (cd "$OUT" && JOBDIR="$OUT/fio" "$FIO" --output-format=json --output="$OUT/r.json" "$OUT/jobs/$job.fio") >/dev/null
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
