#!/usr/bin/env bash
# IOR (hpc/ior, built here from source, run under Open MPI) and `stormark run --ior` with the
# same IOR arguments on the same directory, alternating, ROUNDS rounds each: write then read
# of a file per task (-F -w -r), IOR's new files (stormark's fresh writes), O_DIRECT
# (--posix.odirect, IOR 3's -B) and
# buffered. Prints each round's MiB/s and the ratio stormark/IOR of the medians per phase,
# and stormark's overwrite of a laid-out file beside IOR's fresh write (what fresh costs).
# Usage: bench/ior-vs-stormark.sh STORMARK DIR [IOR_SOURCE]
#   IOR_SOURCE: an unpacked hpc/ior source tree; without it the tree is taken from the git
#   mirror at IOR_MIRROR (default /work/.mirror/hpc+ior/repo) with git archive.
#   env: ROUNDS=3 NP=2 XFER=1m BLOCK=256m
# Needs: openmpi-bin libopenmpi-dev autoconf automake (installed with apt-get when missing).
set -euo pipefail
SM=$(readlink -f "$1"); DIR=$2; SRC=${3:-}
ROUNDS=${ROUNDS:-3}; NP=${NP:-2}; XFER=${XFER:-1m}; BLOCK=${BLOCK:-256m}
MIRROR=${IOR_MIRROR:-/work/.mirror/hpc+ior/repo}
work=$(mktemp -d /tmp/ior-vs-stormark.XXXX)
trap 'rm -rf "$work"' EXIT

need=()
for p in libopenmpi-dev openmpi-bin autoconf automake bc; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get install -y --no-install-recommends "${need[@]}" >/dev/null
fi

# IOR from source: the tree given, or the mirror's newest commit.
if [ -z "$SRC" ]; then
  SRC=$work/ior-src
  mkdir -p "$SRC"
  git --git-dir="$MIRROR" archive HEAD | tar -x -C "$SRC"
fi
build=$work/ior-build
cp -r "$SRC" "$build"
(cd "$build" && ./bootstrap >/dev/null 2>&1 && ./configure --quiet >/dev/null \
  && make -j"$(nproc)" >/dev/null 2>&1)
IOR=$build/src/ior
ior_version=$(git --git-dir="$MIRROR" log -1 --format='%h %cs' 2>/dev/null || echo "$SRC")
echo "IOR: $ior_version; $(mpirun --version | head -1)"

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2)? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# IOR's "Summary of all tests" table: the operation's Mean(MiB) column.
ior_bw() { awk -v op="$2" '/^Summary of all tests/ {s=1} s && $1 == op {print $4; exit}' "$1"; }
sm_bw() {
  python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
p=[p for p in d["phases"] if p["name"]==sys.argv[2]][0]
print(round(p["total"]["bw_bytes_per_s"]/2**20,1))' "$1" "$2"
}

declare -A got
for direct in "--posix.odirect" ""; do
  case_name=$([ -n "$direct" ] && echo direct || echo buffered)
  args="-a POSIX -t $XFER -b $BLOCK -F -w -r $direct"
  for r in $(seq "$ROUNDS"); do
    mkdir -p "$DIR/ior.$r"
    # Each run starts with no dirty pages of the one before to write back.
    sync
    mpirun --allow-run-as-root --oversubscribe -np "$NP" "$IOR" $args \
      -o "$DIR/ior.$r/testFile" > "$work/ior.out"
    rm -rf "$DIR/ior.$r"
    got[$case_name.ior.write]+="$(ior_bw "$work/ior.out" write) "
    got[$case_name.ior.read]+="$(ior_bw "$work/ior.out" read) "
    sync
    "$SM" run "$DIR" --ior "$args -N $NP" --json "$work/sm.json" -q >/dev/null
    got[$case_name.sm.write]+="$(sm_bw "$work/sm.json" run:write) "
    got[$case_name.sm.read]+="$(sm_bw "$work/sm.json" run:read) "
    # stormark's overwrite: the same write into files laid out first (not fresh).
    sync
    "$SM" run "$DIR" --rw write --engine psync --bs "$XFER" --size "$BLOCK" --jobs "$NP" \
      $([ -n "$direct" ] && echo --direct || echo --buffered) --prepare \
      --json "$work/ow.json" -q >/dev/null
    got[$case_name.sm.overwrite]+="$(sm_bw "$work/ow.json" run) "
  done
  for op in write read; do
    i=$(echo "${got[$case_name.ior.$op]}" | tr ' ' '\n' | grep . | median)
    s=$(echo "${got[$case_name.sm.$op]}" | tr ' ' '\n' | grep . | median)
    printf '%-9s %-6s IOR: %s| stormark: %s| median stormark/IOR = %.2f\n' \
      "$case_name" "$op" "${got[$case_name.ior.$op]}" "${got[$case_name.sm.$op]}" \
      "$(echo "$s / $i" | bc -l)"
  done
  o=$(echo "${got[$case_name.sm.overwrite]}" | tr ' ' '\n' | grep . | median)
  s=$(echo "${got[$case_name.sm.write]}" | tr ' ' '\n' | grep . | median)
  printf '%-9s stormark overwrite: %s| fresh/overwrite = %.2f\n' \
    "$case_name" "${got[$case_name.sm.overwrite]}" "$(echo "$s / $o" | bc -l)"
done
