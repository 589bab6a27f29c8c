# Sourced by the side-by-side benches: the CPUs every side of a comparison runs on.
# On a virtual machine the CPUs need not be equally fast: on the 2-core VM of
# docs/performance.md, CPU 0 did 15% more page-cached 4 KiB reads than CPU 1, for stormark and
# t/io_uring alike. Left to the scheduler, each side lands on one by chance, and a round then
# compares two CPUs as much as two programs. So every side runs on the same CPUs: the last N
# this shell may use (`pin_cpus N` sets PIN, the command prefix). CPU=<list> (taskset's form)
# names them; CPU=none leaves them to the scheduler.
pin_cpus() {
  PIN=()
  case ${CPU:-} in
    none) ;;
    "") PIN=(taskset -c "$(python3 -c '
import os, sys
cpus = sorted(os.sched_getaffinity(0))
print(",".join(map(str, cpus[-int(sys.argv[1]):])))' "$1")") ;;
    *) PIN=(taskset -c "$CPU") ;;
  esac
}
# What the pinning is, for the bench's first line.
pinned() { if [ ${#PIN[@]} -gt 0 ]; then echo "CPUs ${PIN[2]}"; else echo "CPUs: the scheduler's"; fi; }
