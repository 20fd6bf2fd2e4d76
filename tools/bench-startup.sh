#!/usr/bin/env bash
# Start-up cost of fleetc as a whole process, side by side in one run: `fleetc version` and
# `fleetc build` of examples/research-fleet, each run N times (default 20); prints the
# minimum and median wall time (on a loaded machine the minimum is the fairer number), then
# the heaviest package initializers (GODEBUG=inittrace=1) of `fleetc version`.
#
#   bash tools/bench-startup.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/fleetc" ./cmd/fleetc

# measure NAME CMD...: N runs of CMD (after one warm-up), wall time in microseconds.
measure() {
	local name=$1 walls=() start end sw
	shift
	"$@" >/dev/null 2>&1 || { echo "$name: command failed: $*" >&2; return 1; }
	for _ in $(seq "$n"); do
		start=$(date +%s%N)
		"$@" >/dev/null 2>&1
		end=$(date +%s%N)
		walls+=($(((end - start) / 1000)))
	done
	sw=$(printf '%s\n' "${walls[@]}" | sort -n)
	printf '%-40s min %7.1f ms  median %7.1f ms\n' "$name" \
		"$(echo "$sw" | head -1 | awk '{print $1/1000}')" \
		"$(echo "$sw" | awk -v m=$(((n + 1) / 2)) 'NR==m {print $1/1000}')"
}

echo "fleetc start-up, $n runs each, load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
measure "fleetc version" "$tmp/fleetc" version
measure "fleetc build examples/research-fleet" "$tmp/fleetc" build examples/research-fleet/fleet.yaml -o "$tmp/out"
echo "heaviest initializers of fleetc version (one run):"
GODEBUG=inittrace=1 "$tmp/fleetc" version 2>&1 >/dev/null | awk '/^init / {printf "  %-60s %6s ms %9s bytes\n", $2, $5, $8}' | sort -k2 -n -r | head -12
GODEBUG=inittrace=1 "$tmp/fleetc" version 2>&1 >/dev/null | awk '/^init / {s += $5; if ($2 ~ /^github.com\/fleetc\//) o += $5} END {printf "  all package init: %.1f ms, of which fleetc'"'"'s own packages %.1f ms\n", s, o}'
