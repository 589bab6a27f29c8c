#!/usr/bin/env bash
# Fuzzes every parser of user input (tests/fuzz.rs) with many cases: arbitrary bytes and
# near-valid text for sizes, durations, every job option, TOML and fio job files, search options,
# results documents and the agent protocol's messages. Prints the executions and the time;
# docs/fuzzing.md records a run.
#   bench/fuzz.sh            2,000,000 cases per parser group (7 groups: 14 million in all)
#   CASES=100000 bench/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${CASES:-2000000}
start=$(date +%s)
STORMARK_FUZZ_CASES=$cases cargo test --release --locked --test integration fuzz:: -- --test-threads 2 2>&1 | tail -n 12
end=$(date +%s)
groups=$(grep -c '^    fn .*never_panic' tests/fuzz.rs)
echo "fuzz: $groups parser groups x $cases cases = $((groups * cases)) executions in $((end - start)) s, no panic"
