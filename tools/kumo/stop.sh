#!/usr/bin/env bash
# Stops the kumo started by tools/kumo/start.sh (by its recorded pid only).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PORT="${FLEETC_KUMO_PORT:-4566}"
PIDFILE="$ROOT/bin/kumo.pid"
[[ "$PORT" == 4566 ]] || PIDFILE="$ROOT/bin/kumo-$PORT.pid"
[[ -f "$PIDFILE" ]] || exit 0
pid=$(cat "$PIDFILE")
if kill -0 "$pid" 2>/dev/null; then
	kill "$pid"
	for _ in $(seq 1 20); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.25
	done
fi
rm -f "$PIDFILE"
