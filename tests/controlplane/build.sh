#!/usr/bin/env bash
#! Builds the test control plane from Go modules and caches it outside the repository:
#! kube-apiserver, kube-controller-manager and kubectl from k8s.io/kubernetes (kube/go.mod) and etcd
#! from go.etcd.io/etcd/server/v3 (etcd/go.mod), every version pinned by those go.mod/go.sum
#! files. The binaries land in ${FLOTILLA_CACHE:-~/.cache/flotilla}/controlplane-KEY/, KEY being a
#! hash of the four files, so a version change builds anew and an unchanged one returns at once;
#! Go's module and build caches live beside them (go-mod/, go-build/). Prints the binaries'
#! directory on stdout. Uses the machine's Go (GOTOOLCHAIN=local: no toolchain download) and fails,
#! naming the module, when it cannot build: there is no fallback to another version.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_DIR="${FLOTILLA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flotilla}"

log() { printf '[build-controlplane] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The version a go.mod requires of MODULE.
required() {
  awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$1"
}

KUBE_VERSION="$(required "$HERE/kube/go.mod" k8s.io/kubernetes)"
ETCD_VERSION="$(required "$HERE/etcd/go.mod" go.etcd.io/etcd/server/v3)"
[ -n "$KUBE_VERSION" ] && [ -n "$ETCD_VERSION" ] || die "no k8s.io/kubernetes or etcd version in $HERE/*/go.mod"
KEY="$(cat "$HERE"/kube/go.mod "$HERE"/kube/go.sum "$HERE"/etcd/go.mod "$HERE"/etcd/go.sum | sha256sum | cut -c1-12)"
BIN_DIR="$CACHE_DIR/controlplane-$KEY"
BINARIES=(kube-apiserver kube-controller-manager kubectl etcd)

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly
export GOMODCACHE="$CACHE_DIR/go-mod" GOCACHE="$CACHE_DIR/go-build"

ensure_packages() {
  local missing=()
  command -v go >/dev/null || die "go is not installed (this machine kind ships Go; see README)"
  command -v openssl >/dev/null || missing+=(openssl)
  command -v curl >/dev/null || missing+=(curl)
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]}"
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
  fi
}

all_cached() {
  local b
  for b in "${BINARIES[@]}"; do
    [ -x "$BIN_DIR/$b" ] || return 1
  done
}

# Sets the version Kubernetes' own build (hack/lib/version.sh) stamps into its binaries, so
# /version and `kubectl version` report v$KUBE_VERSION instead of v0.0.0-master.
kube_ldflags() {
  local minor="${KUBE_VERSION#v*.}" flags=() key value
  minor="${minor%%.*}"
  for pair in "gitVersion=$KUBE_VERSION" "gitMajor=1" "gitMinor=$minor" "gitTreeState=clean" \
    "buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"; do
    key="${pair%%=*}" value="${pair#*=}"
    flags+=("-X k8s.io/client-go/pkg/version.$key=$value" "-X k8s.io/component-base/version.$key=$value")
  done
  echo "-s -w ${flags[*]}"
}

build() {
  local out="$BIN_DIR.tmp" start=$SECONDS
  rm -rf "$out" && mkdir -p "$out"
  log "building kube-apiserver, kube-controller-manager and kubectl $KUBE_VERSION (k8s.io/kubernetes; about 20 minutes on 2 cores the first time)"
  (cd "$HERE/kube" && go build -trimpath -ldflags "$(kube_ldflags)" -o "$out/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kubectl) >&2 || die "building k8s.io/kubernetes $KUBE_VERSION failed (Go: $(go version))"
  log "building etcd $ETCD_VERSION (go.etcd.io/etcd/server/v3)"
  (cd "$HERE/etcd" && go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3) >&2 ||
    die "building go.etcd.io/etcd/server/v3 $ETCD_VERSION failed (Go: $(go version))"
  printf 'kubernetes %s\netcd %s\n%s\n' "$KUBE_VERSION" "$ETCD_VERSION" "$(go version)" >"$out/VERSIONS"
  rm -rf "$BIN_DIR" && mv "$out" "$BIN_DIR"
  log "built in $((SECONDS - start)) s; cached in $BIN_DIR"
}

main() {
  ensure_packages
  all_cached || build
  echo "$BIN_DIR"
}

main "$@"
