#!/usr/bin/env bash
# Starts the kumo AWS emulator on 127.0.0.1:4566 unless something already answers /health there.
# kumo must own port 4566: it calls itself there when Step Functions sends to SQS or EventBridge
# delivers to SQS. Writes bin/kumo.pid and logs to bin/kumo.log; stop with tools/kumo/stop.sh.
# FLEETC_KUMO_PORT overrides the port only to exercise this script (pid/log become bin/kumo-PORT.*).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="$ROOT/bin"
PORT="${FLEETC_KUMO_PORT:-4566}"
NAME=kumo
[[ "$PORT" == 4566 ]] || NAME="kumo-$PORT"
URL="http://127.0.0.1:$PORT/health"
healthy() { curl -fsS -m 2 -o /dev/null "$URL" 2>/dev/null; }

if healthy; then
	echo "tools/kumo/start.sh: kumo already answers $URL" >&2
	exit 0
fi
if [[ ! -x "$BIN/kumo" ]]; then
	echo "tools/kumo/start.sh: $BIN/kumo missing; run: bash tools/install.sh kumo" >&2
	exit 1
fi

# setsid detaches kumo from this shell's process group, so CI step teardown does not take it down early.
setsid "$BIN/kumo" serve --host 127.0.0.1 --port "$PORT" >"$BIN/$NAME.log" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$BIN/$NAME.pid"

for _ in $(seq 1 60); do
	if healthy; then
		echo "tools/kumo/start.sh: kumo (pid $pid) healthy at $URL" >&2
		exit 0
	fi
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "tools/kumo/start.sh: kumo exited early; log follows" >&2
		cat "$BIN/$NAME.log" >&2
		rm -f "$BIN/$NAME.pid"
		exit 1
	fi
	sleep 0.5
done
echo "tools/kumo/start.sh: kumo (pid $pid) not healthy after 30s; log follows" >&2
cat "$BIN/$NAME.log" >&2
exit 1
