#!/usr/bin/env bash
# A `go test -exec` wrapper that runs each test binary, and the terraform, kumo clients and
# checkers it starts, at its package's CPU priority (tools/test-all.sh says why):
# - nice 0: cmd/... and runtime/..., the emulator loops (cmd/fleetc/cli's are the suite's
#   longest chain) and the live timings (simulate, dev, the worker's fault tests);
# - nice 10: compiler/deploy, an emulator loop with time to spare;
# - nice 19: the rest, the compiler and its checkers (terraform validate, kubeconform,
#   asl-validator, tsc, mypy), which have no timings to miss. At 19 a process gets ~1.5% of a
#   core that nice-0 work wants, so nothing there may wait on a fixed clock: in CI a terraform
#   validate missed go-plugin's one-minute wait for hashicorp/aws to start, which is why
#   verifytest now starts that provider once per test binary (internal/verifytest/reattach.go).
#   Nice 10 instead cost two minutes (docs/development.md, "Test time").
# With FLEETC_TESTTIME_LOG set it also records each package's times (tools/testtime.sh).
# go test runs the binary in its package's directory, so $PWD names the package.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case ${PWD#"$root"/} in
cmd | cmd/* | runtime | runtime/*) prio=0 ;;
compiler/deploy) prio=10 ;;
*) prio=19 ;;
esac
if [[ -n ${FLEETC_TESTTIME_LOG:-} ]]; then
	set -- "$root/tools/testtime.sh" "$@"
fi
exec nice -n "$prio" "$@"
