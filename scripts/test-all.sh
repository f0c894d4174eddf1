#!/usr/bin/env bash
# The body of `npm test`, run by with-valkey (ECHOMQ_TEST_URL names the throwaway Valkey): the
# jest suite (extra arguments go to jest), the bench package's jest suite, then the Go peer's
# tests (its conformance runner on the same scenario files, against the same Valkey). All always
# run; the exit code fails if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${ECHOMQ_TEST_URL:?run through with-valkey (npm test does)}"
# --forceExit: a spec that fails before its cleanup can leave a handle open, and jest would then
# wait forever (seen once under load); the failure itself is still reported and fails the run.
# --max-old-space-size: jest's ESM mode keeps every spec file's module graph (NestJS, iovalkey…)
# alive until the run ends, ~35-50 MB per file in band; past ~110 files that crosses node's
# default 4 GB heap limit (seen: "JavaScript heap out of memory" after 650 s).
node --max-old-space-size=12288 --experimental-vm-modules node_modules/jest/bin/jest.js --runInBand --forceExit "$@"
jest=$?
# The bench package's own tests (bench/test, its jest config) on the same Valkey; skipped when
# arguments narrow the run to some of the library's specs.
benchtest=0
if [ "$#" -eq 0 ]; then
  (cd bench && node --experimental-vm-modules ../node_modules/jest/bin/jest.js --runInBand --forceExit)
  benchtest=$?
fi
GO=$(bash scripts/ensure-go.sh) || exit 1
# -p 1: the packages share the one Valkey and the process-wide keys (`{emq}:node-seq`, `{emq}:nodes`):
# the root package's node tests and the conformance runner's node scenarios must not interleave
# (seen once: a node-describe scenario read a node-seq another package's test had just moved).
(cd peers/go && "$GO" test -p 1 -count=1 ./...)
gotest=$?
if [ "$jest" -ne 0 ] || [ "$benchtest" -ne 0 ] || [ "$gotest" -ne 0 ]; then
  echo "npm test failed: jest exit code $jest, bench jest exit code $benchtest, go test exit code $gotest" >&2
  exit 1
fi
