#!/usr/bin/env bash
# The body of `npm test`, run by with-valkey (ECHOMQ_TEST_URL names the throwaway Valkey): the
# jest suite (extra arguments go to jest), then the Go peer's tests (its conformance runner on the
# same scenario files, against the same Valkey). Both always run; the exit code fails if either
# failed.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${ECHOMQ_TEST_URL:?run through with-valkey (npm test does)}"
# --forceExit: a spec that fails before its cleanup can leave a handle open, and jest would then
# wait forever (seen once under load); the failure itself is still reported and fails the run.
node --experimental-vm-modules node_modules/jest/bin/jest.js --runInBand --forceExit "$@"
jest=$?
GO=$(bash scripts/ensure-go.sh) || exit 1
(cd peers/go && "$GO" test -count=1 ./...)
gotest=$?
if [ "$jest" -ne 0 ] || [ "$gotest" -ne 0 ]; then
  echo "npm test failed: jest exit code $jest, go test exit code $gotest" >&2
  exit 1
fi
