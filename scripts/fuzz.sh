#!/usr/bin/env bash
# Runs every go test -fuzz target of the repository briefly (FUZZTIME,
# default 5s each). Their seed corpora also run in the normal test suite; this
# adds a short coverage-guided search on every CI run.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-5s}
grep -rl --include='*_test.go' '^func Fuzz' pkg internal | sort -u | while read -r file; do
  pkg="./$(dirname "$file")"
  for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //'); do
    echo "fuzz: $pkg $target ($fuzztime)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" > /tmp/fuzz-$$.log 2>&1 || { cat /tmp/fuzz-$$.log; exit 1; }
  done
done
rm -f /tmp/fuzz-$$.log
echo "fuzz: ok"
