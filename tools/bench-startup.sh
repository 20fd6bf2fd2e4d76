#!/usr/bin/env bash
# Start-up cost of fleetc as a whole process, side by side in one run: the floor (a Go
# program that prints one line, linking nothing), `fleetc version` and `fleetc build` of
# examples/research-fleet, each run N times (default 20); prints the minimum and median wall
# time (on a loaded machine the minimum is the fairer number, and the floor says how loaded),
# then the heaviest package initializers (GODEBUG=inittrace=1) of `fleetc version`.
#
#   bash tools/bench-startup.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/fleetc" ./cmd/fleetc
go build -o "$tmp/startphases" ./tools/startphases
mkdir "$tmp/floor"
printf 'package main\n\nimport "os"\n\nfunc main() { os.Stdout.WriteString("floor\\n") }\n' >"$tmp/floor/main.go"
printf 'module floor\n\ngo 1.21\n' >"$tmp/floor/go.mod"
(cd "$tmp/floor" && go build -o "$tmp/floor-bin" .)

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
measure "floor (Go hello world)" "$tmp/floor-bin"
measure "fleetc version" "$tmp/fleetc" version
measure "fleetc build examples/research-fleet" "$tmp/fleetc" build examples/research-fleet/fleet.yaml -o "$tmp/out"
# Each cold phase's least time over N fresh processes.
for _ in $(seq "$n"); do "$tmp/startphases" examples/research-fleet/fleet.yaml; done |
	awk '{for (i = 1; i < NF; i += 2) if (!($i in t) || $(i + 1) < t[$i]) t[$i] = $(i + 1)}
	END {printf "cold phases of that build (least of '"$n"'): schema compile %.1f ms, load %.1f ms, generate %.1f ms\n", t["schema"], t["load"], t["generate"]}'
# Each package's least init time over 5 runs: one run on a loaded machine charges a
# package for whatever preempted it.
inits=$(for _ in 1 2 3 4 5; do GODEBUG=inittrace=1 "$tmp/fleetc" version 2>&1 >/dev/null; done |
	awk '/^init / {if (!($2 in t) || $5 < t[$2]) {t[$2] = $5; b[$2] = $8}} END {for (p in t) print p, t[p], b[p]}')
echo "heaviest initializers of fleetc version (least of 5 runs):"
echo "$inits" | sort -k2 -g -r | head -12 | awk '{printf "  %-60s %6s ms %9s bytes\n", $1, $2, $3}'
echo "$inits" | awk '{s += $2; if ($1 ~ /^github.com\/fleetc\//) o += $2} END {printf "  all package init: %.1f ms, of which fleetc'"'"'s own packages %.1f ms\n", s, o}'
