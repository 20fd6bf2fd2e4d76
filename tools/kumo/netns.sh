#!/usr/bin/env bash
# Runs a command beside a kumo of its own: in a private network namespace (run this script under
# `unshare --net`, as root), kumo owns 127.0.0.1:4566 there without touching a shared emulator,
# so kumo-bound test packages can run side by side. Everything the tests need is offline (the
# provider mirror, the Go module cache); the namespace has loopback only.
#   unshare --net bash tools/kumo/netns.sh go test ./runtime/worker
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [[ -n "$(ip -o link show up 2>/dev/null | grep -v ': lo:')" ]]; then
	echo "tools/kumo/netns.sh: this namespace has interfaces besides lo; run it under 'unshare --net'" >&2
	exit 2
fi
ip link set lo up
log="$(mktemp -d)"
setsid "$ROOT/bin/kumo" serve --host 127.0.0.1 --port 4566 >"$log/kumo.log" 2>&1 </dev/null &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$log"' EXIT
for _ in $(seq 1 60); do
	curl -fsS -m 2 -o /dev/null http://127.0.0.1:4566/health 2>/dev/null && break
	kill -0 "$pid" 2>/dev/null || { cat "$log/kumo.log" >&2; exit 1; }
	sleep 0.5
done
"$@"
