#!/usr/bin/env bash
# go test ./..., as .ci/run runs it (docs/development.md "Test time"):
#
#   bash tools/test-all.sh [go test flags...]
#
# The suite is CPU-bound on 2 cores (terraform and the AWS provider), and its longest chain is
# cmd/fleetc/cli's emulator loops. So every package starts at once and the kernel, not go
# test's slots, decides who runs: tools/testprio.sh runs each test binary at its package's
# priority, the loops and live timings first, the compiler's checkers in what is left.
# - The slow packages are named first: go test starts packages in the order it is given them
#   (./... then adds the rest, each once).
# - -p 8: with fewer slots the checkers queued behind the long loops and ran on alone after
#   them; at their normal priority -p 8 drove the load to 32 and TestSimulationMatchesDev's
#   live timings past their tolerance.
# - TestBinaryPeakRSS is skipped here: it measures fleet-worker's memory budget, which only
#   means something on an idle machine (under this load it read 46.6-51.3 MiB against 46.4
#   alone). .ci/run runs it as its own step after the suite.
# - -timeout: well above the longest package, cmd/fleetc/cli.
set -euo pipefail
cd "$(dirname "$0")/.."
slow=(./cmd/fleetc/cli ./cmd/fleetc/simulate ./compiler/deploy ./cmd/fleetc/dev ./cmd/fleetc ./runtime/worker ./compiler)
exec go test -count=1 -p 8 -timeout 40m -skip '^TestBinaryPeakRSS$' -exec "$PWD/tools/testprio.sh" "$@" "${slow[@]}" ./...
