#!/usr/bin/env bash
# Runs every go test -fuzz target of the repository briefly (FUZZTIME
# executions each, default 50000x). Their seed corpora also run in the normal
# test suite; this adds a short coverage-guided search on every CI run.
#
# The budget is a count, not a duration: with a duration, Go 1.26's fuzzing
# coordinator can report its own end-of-time deadline as a failure
# ("context deadline exceeded", no failing input) on a loaded machine
# (go.dev/issue/75804, fixed in Go 1.27). A count has no deadline to race.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-50000x}
grep -rl --include='*_test.go' '^func Fuzz' pkg internal | sort -u | while read -r file; do
  pkg="./$(dirname "$file")"
  for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //'); do
    budget=$fuzztime
    case $target in
      # One HTTP round trip through two client stacks per input: ~30x slower.
      FuzzJSONRPCStreams) budget=${FUZZTIME_SLOW:-3000x} ;;
    esac
    echo "fuzz: $pkg $target ($budget)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$budget" "$pkg" > /tmp/fuzz-$$.log 2>&1 || { cat /tmp/fuzz-$$.log; exit 1; }
  done
done
rm -f /tmp/fuzz-$$.log
echo "fuzz: ok"
