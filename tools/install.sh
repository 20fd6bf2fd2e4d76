#!/usr/bin/env bash
# Installs the offline checkers fleetc's tests run against generated artifacts:
#   bin/kubeconform                      (Go, tools/kubeconform module)
#   tools/node/node_modules/.bin/asl-validator  (npm, tools/node/package-lock.json)
#   tools/mermaid/node_modules           (npm, tools/mermaid/package-lock.json: mermaid's parser)
#   dot                                  (Debian's graphviz, through apt-get when missing; root only)
#   bin/kumo                             (Go, tools/kumo module; ~8 min cold, seconds warm)
#   bin/aws-lambda-rie                   (Go, tools/rie module: AWS's Lambda Runtime Interface Emulator,
#                                         which fleetc dev and the worker's tests run Lambda mode under)
#   bin/tf-schema-mirror/                (Go, tools/tfschemaprovider: a schema-only hashicorp/aws
#                                         serving ../shared/terraform/aws-provider-schema.json, laid
#                                         out as a provider filesystem mirror for terraform validate)
#   bin/staticcheck                      (Go, honnef.co/go/tools at STATICCHECK_VERSION: the linter CI runs)
#   bin/oasdiff                          (Go, tools/oasdiff module: the independent breaking-change
#                                         checker compiler/compat's differential test runs)
#   bin/tfsec                            (Go, tools/tfsec module: the static checker of the generated
#                                         Terraform; compiler's TestTfsecEveryExample runs it)
#   tools/gateway-clients/node_modules   (npm, tools/gateway-clients/package-lock.json: the openai SDK,
#                                         the AI SDK and the AWS SDK's Bedrock Runtime client, run
#                                         against fleet-worker's model gateway by cmd/fleet-worker's tests)
#   curl                                 (Debian package, when missing and run as root: the model
#                                         gateway test calls the gateway from a shell handler)
#   chromium                             (Debian package, when missing and run as root: the
#                                         fleetc dev live page test loads the page headless)
#
# Usage (from anywhere; paths are resolved from this script):
#   bash tools/install.sh                 # everything
#   bash tools/install.sh kubeconform asl # a subset: kubeconform | asl | kumo | schema-provider
#   FLEETC_SKIP_KUMO=1 bash tools/install.sh
#
# Idempotent: each tool carries a stamp (hash of the files that pin it); a tool whose
# stamp matches is skipped, so a warm run takes well under a second.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/bin"
mkdir -p "$BIN"
# Binaries are build output, never source: keep them out of git without touching the root .gitignore.
[[ -f "$BIN/.gitignore" ]] || printf '*\n' >"$BIN/.gitignore"

# The tools modules are standalone; never let a go.work or GOFLAGS=-mod=vendor leak in.
export GOWORK=off

log() { printf 'tools/install.sh: %s\n' "$*" >&2; }

# stamp FILE... prints one hash over the named files (their content, not their mtime).
stamp() { cat "$@" | sha256sum | cut -d' ' -f1; }

# up_to_date TARGET STAMPFILE HASH: true when TARGET exists and STAMPFILE holds HASH.
up_to_date() { [[ -e "$1" && -f "$2" && "$(cat "$2")" == "$3" ]]; }

timed() {
	local name=$1 start end
	shift
	start=$(date +%s)
	"$@"
	end=$(date +%s)
	log "$name: done in $((end - start))s"
}

# staticcheck: the linter .ci/run runs after go vet, pinned here (the version is the stamp).
STATICCHECK_VERSION=v0.8.2
install_staticcheck() {
	local out="$BIN/staticcheck" st="$BIN/.staticcheck.stamp" h
	h=$(echo "$STATICCHECK_VERSION $(go env GOVERSION)" | sha256sum | cut -d' ' -f1)
	if up_to_date "$out" "$st" "$h"; then
		log "staticcheck: up to date ($STATICCHECK_VERSION)"
		return
	fi
	log "staticcheck: go install honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
	GOBIN="$BIN" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
	echo "$h" >"$st"
}

install_kubeconform() {
	local mod="$ROOT/tools/kubeconform" out="$BIN/kubeconform" st="$BIN/.kubeconform.stamp" h ver
	h=$(stamp "$mod/go.mod" "$mod/go.sum")
	if up_to_date "$out" "$st" "$h"; then
		log "kubeconform: up to date ($("$out" -v))"
		return
	fi
	ver=$(cd "$mod" && go list -m -f '{{.Version}}' github.com/yannh/kubeconform)
	log "kubeconform: building $ver"
	(cd "$mod" && go build -ldflags "-X main.version=$ver" -o "$out.tmp" github.com/yannh/kubeconform/cmd/kubeconform)
	mv -f "$out.tmp" "$out"
	echo "$h" >"$st"
}

install_oasdiff() {
	local mod="$ROOT/tools/oasdiff" out="$BIN/oasdiff" st="$BIN/.oasdiff.stamp" h ver
	h=$(stamp "$mod/go.mod" "$mod/go.sum")
	if up_to_date "$out" "$st" "$h"; then
		log "oasdiff: up to date"
		return
	fi
	ver=$(cd "$mod" && go list -m -f '{{.Version}}' github.com/oasdiff/oasdiff)
	log "oasdiff: building $ver"
	(cd "$mod" && go build -o "$out.tmp" github.com/oasdiff/oasdiff)
	mv -f "$out.tmp" "$out"
	echo "$h" >"$st"
}

install_tfsec() {
	local mod="$ROOT/tools/tfsec" out="$BIN/tfsec" st="$BIN/.tfsec.stamp" h ver
	h=$(stamp "$mod/go.mod" "$mod/go.sum")
	if up_to_date "$out" "$st" "$h"; then
		log "tfsec: up to date"
		return
	fi
	ver=$(cd "$mod" && go list -m -f '{{.Version}}' github.com/aquasecurity/tfsec)
	log "tfsec: building $ver"
	(cd "$mod" && go build -ldflags "-X github.com/aquasecurity/tfsec/version.Version=$ver" -o "$out.tmp" github.com/aquasecurity/tfsec/cmd/tfsec)
	mv -f "$out.tmp" "$out"
	echo "$h" >"$st"
}

# npm_dir NAME DIR MARKER: npm ci in tools/DIR (its package.json and package-lock.json pin it)
# unless DIR/node_modules/MARKER exists and the lock's stamp matches.
npm_dir() {
	local name=$1 dir="$ROOT/tools/$2" marker=$3 st h
	st="$dir/node_modules/.fleetc-lock.sha256"
	if ! command -v npm >/dev/null; then
		log "$name: npm not found; install Node.js >= 18 (apt-get install nodejs npm)"
		return 1
	fi
	h=$(stamp "$dir/package.json" "$dir/package-lock.json")
	if up_to_date "$dir/node_modules/$marker" "$st" "$h"; then
		log "$name: up to date"
		return
	fi
	log "$name: npm ci"
	npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >&2
	echo "$h" >"$st"
}

install_asl() { npm_dir asl-validator node .bin/asl-validator; }
install_typescript() { npm_dir typescript typescript .bin/tsc; }
install_mermaid() { npm_dir mermaid mermaid mermaid; }
install_mcp_inspector() { npm_dir mcp-inspector mcp-inspector .bin/mcp-inspector-cli; }
install_gateway_clients() { npm_dir gateway-clients gateway-clients openai; }

# mypy checks the Python handler types (fleetc types --lang python); PyPI is out of reach in
# CI, so it comes from Debian's package, and only where apt-get may run.
install_mypy() {
	if command -v mypy >/dev/null; then
		log "mypy: up to date ($(mypy --version))"
		return
	fi
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		log "mypy: apt-get install mypy"
		apt-get install -y --no-install-recommends mypy >&2 || { apt-get update >&2 && apt-get install -y --no-install-recommends mypy >&2; }
		return
	fi
	log "mypy: not found; install it (apt-get install mypy); the python types test skips without it"
}

install_graphviz() {
	if command -v dot >/dev/null; then
		log "graphviz: up to date ($(dot -V 2>&1))"
		return
	fi
	if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
		log "graphviz: dot not found; install Debian's graphviz (apt-get install graphviz)"
		return 1
	fi
	log "graphviz: apt-get install graphviz"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q graphviz >&2 ||
		{ apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q graphviz >&2; }
}

install_chromium() {
	if command -v chromium >/dev/null; then
		log "chromium: up to date"
		return
	fi
	if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
		log "chromium: not found; install Debian's chromium (apt-get install chromium)"
		return 1
	fi
	log "chromium: apt-get install chromium"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >&2 ||
		{ apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >&2; }
}

install_kumo() {
	local mod="$ROOT/tools/kumo" out="$BIN/kumo" st="$BIN/.kumo.stamp" h
	h=$(stamp "$mod/go.mod" "$mod/go.sum")
	if up_to_date "$out" "$st" "$h"; then
		log "kumo: up to date"
		return
	fi
	log "kumo: building (about 8 min on 2 cores with a cold Go cache, seconds when warm)"
	(cd "$mod" && go build -o "$out.tmp" github.com/sivchari/kumo/cmd/kumo)
	mv -f "$out.tmp" "$out"
	echo "$h" >"$st"
}

install_rie() {
	local mod="$ROOT/tools/rie" out="$BIN/aws-lambda-rie" st="$BIN/.aws-lambda-rie.stamp" h ver
	h=$(stamp "$mod/go.mod" "$mod/go.sum")
	if up_to_date "$out" "$st" "$h"; then
		log "rie: up to date"
		return
	fi
	ver=$(cd "$mod" && go list -m -f '{{.Version}}' github.com/aws/aws-lambda-runtime-interface-emulator)
	log "rie: building aws-lambda-rie $ver"
	(cd "$mod" && go build -o "$out.tmp" github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie)
	mv -f "$out.tmp" "$out"
	echo "$h" >"$st"
}

install_schema_provider() {
	local mod="$ROOT/tools/tfschemaprovider" schema="${FLEETC_SHARED_DIR:-$ROOT/../shared}/terraform/aws-provider-schema.json"
	# The released 5.100.0 schema supplies the types the 6.x subset lacks (aws_eks_pod_identity_association).
	local supplement="${FLEETC_SHARED_DIR:-$ROOT/../shared}/terraform/aws-provider-schema-5.100.0.json"
	local mirror="$BIN/tf-schema-mirror" st="$BIN/.tf-schema-mirror.stamp" h ver platform dir
	if [[ ! -f "$schema" ]]; then
		log "schema-provider: skipped, $schema not found (CI expects shared/ at ../shared)"
		return
	fi
	if [[ ! -f "$supplement" ]]; then
		log "schema-provider: skipped, $supplement not found (CI expects shared/ at ../shared)"
		return
	fi
	h=$(stamp "$mod/go.mod" "$mod/go.sum" "$mod/main.go" "$schema" "$supplement")
	if up_to_date "$mirror" "$st" "$h"; then
		log "schema-provider: up to date ($(cd "$mirror" && echo registry.terraform.io/hashicorp/aws/*))"
		return
	fi
	# The document says which release its schema stands for ("registered as hashicorp/aws 6.48.0").
	ver=$(grep -o 'registered as hashicorp/aws [0-9][0-9.]*[0-9]' "$schema" | head -n1 | awk '{print $4}')
	if [[ -z "$ver" ]]; then
		log "schema-provider: no 'registered as hashicorp/aws X.Y.Z' in $schema source_note"
		return 1
	fi
	platform="$(go env GOOS)_$(go env GOARCH)"
	dir="$mirror/registry.terraform.io/hashicorp/aws/$ver/$platform"
	log "schema-provider: building hashicorp/aws $ver (schema only) into $dir"
	rm -rf "$mirror"
	mkdir -p "$dir"
	(cd "$mod" && go build -o "$dir/terraform-provider-aws_v${ver}_x5" .)
	cp "$schema" "$dir/schema.json"
	cp "$supplement" "$dir/schema-supplement.json"
	"$dir/terraform-provider-aws_v${ver}_x5" -check >&2
	echo "$h" >"$st"
}

# curl: the model gateway test runs an exec handler written in shell that calls it with curl.
install_curl() {
	if command -v curl >/dev/null; then
		log "curl: present ($(curl --version | head -1 | cut -d' ' -f1-2))"
		return
	fi
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		log "curl: apt-get install curl"
		apt-get install -y --no-install-recommends curl >&2 || { apt-get update >&2 && apt-get install -y --no-install-recommends curl >&2; }
		return
	fi
	log "curl: not found; install it (apt-get install curl)"
	return 1
}

# install_one TOOL installs one tool by name.
install_one() {
	case "$1" in
	kubeconform) timed kubeconform install_kubeconform ;;
	oasdiff) timed oasdiff install_oasdiff ;;
	tfsec) timed tfsec install_tfsec ;;
	staticcheck) timed staticcheck install_staticcheck ;;
	asl | asl-validator) timed asl-validator install_asl ;;
	mermaid) timed mermaid install_mermaid ;;
	gateway-clients) timed gateway-clients install_gateway_clients ;;
	mcp-inspector) timed mcp-inspector install_mcp_inspector ;;
	typescript | tsc) timed typescript install_typescript ;;
	mypy) timed mypy install_mypy ;;
	graphviz | dot) timed graphviz install_graphviz ;;
	kumo) timed kumo install_kumo ;;
	rie) timed rie install_rie ;;
	schema-provider) timed schema-provider install_schema_provider ;;
	curl) install_curl ;;
	chromium) timed chromium install_chromium ;;
	*)
		log "unknown tool '$1' (want: kubeconform asl mermaid gateway-clients mcp-inspector typescript mypy graphviz kumo schema-provider oasdiff staticcheck tfsec curl chromium rie)"
		return 2
		;;
	esac
}

# lane TOOL... installs the tools in order; under set -e the first failure ends it (never
# call it where `||` or `if` would switch set -e off inside the install functions).
lane() {
	local t
	for t in "$@"; do
		install_one "$t"
	done
}

want=("$@")
if [[ ${#want[@]} -gt 0 ]]; then
	lane "${want[@]}"
	exit
fi

# Everything, in three lanes at once: what mostly downloads (npm, apt-get: one at a time, apt
# holds a lock) beside two lanes of Go builds, which are CPU-bound but leave cores idle while
# one of them links or compiles a single large package. On a fresh 2-core machine one lane
# took 430 s (kumo 185 s, tfsec 117 s); docs/development.md "Test time".
start=$(date +%s)
lane asl mermaid gateway-clients mcp-inspector typescript mypy graphviz curl chromium &
downloads=$!
if [[ "${FLEETC_SKIP_KUMO:-}" == 1 ]]; then
	log "kumo: skipped (FLEETC_SKIP_KUMO=1)"
	lane rie &
else
	lane kumo rie &
fi
emulators=$!
lane tfsec staticcheck oasdiff kubeconform schema-provider &
builds=$!
status=0
for pid in "$builds" "$emulators" "$downloads"; do
	wait "$pid" || status=$?
done
log "all tools: done in $(($(date +%s) - start))s (exit $status)"
exit "$status"
