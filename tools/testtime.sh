#!/usr/bin/env bash
# A `go test -exec` wrapper that appends each test binary's wall and CPU time (its children,
# terraform and the provider, included) to $FLEETC_TESTTIME_LOG, one line per package:
#   FLEETC_TESTTIME_LOG=/tmp/t.log go test -count=1 -p 8 -exec "$PWD/tools/testtime.sh" ./...
#   sort -rn /tmp/t.log | head     # wall s, user s, sys s, package directory
# go test runs the binary in its package's directory, so $PWD names the package.
set -euo pipefail
log=${FLEETC_TESTTIME_LOG:?set FLEETC_TESTTIME_LOG to the file to append to}
root=$(git rev-parse --show-toplevel 2>/dev/null || pwd)
exec /usr/bin/time -a -o "$log" -f "%e %U %S ${PWD#"$root"/}" "$@"
