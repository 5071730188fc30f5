#!/usr/bin/env bash
#! Builds kube-apiserver, kube-controller-manager and kubectl 1.20.2 from Debian's kubernetes source
#! package and caches them outside the repo. Idempotent: a second run with the binaries cached
#! returns at once.
set -euo pipefail

KUBE_VERSION=1.20.2
BINARIES=(kube-apiserver kube-controller-manager kubectl)
CACHE_DIR="${FLOTILLA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flotilla}"
BIN_DIR="$CACHE_DIR/kube-$KUBE_VERSION"
WORK_DIR="$CACHE_DIR/build"

log() { printf '[build-kube] %s\n' "$*" >&2; }

ensure_packages() {
  local missing=()
  command -v go >/dev/null || missing+=(golang-go)
  command -v etcd >/dev/null || missing+=(etcd-server)
  command -v rsync >/dev/null || missing+=(rsync)
  command -v jq >/dev/null || missing+=(jq)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v curl >/dev/null || missing+=(curl)
  [ -d /usr/share/gocode/src/github.com/modern-go/reflect2 ] || missing+=(golang-github-modern-go-reflect2-dev)
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]}"
    apt_update
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
  fi
}

APT_UPDATED=0
apt_update() {
  if [ "$APT_UPDATED" = 0 ]; then
    apt-get update -q >&2
    APT_UPDATED=1
  fi
}

ensure_deb_src() {
  local src=/etc/apt/sources.list.d/flotilla-deb-src.sources
  if [ ! -f "$src" ]; then
    log "adding deb-src entry for bookworm"
    cat >"$src" <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    APT_UPDATED=0
  fi
  apt_update
}

fetch_source() {
  local tarball
  tarball=$(ls "$WORK_DIR"/kubernetes_*.orig.tar.gz 2>/dev/null | head -n1 || true)
  if [ -z "$tarball" ]; then
    ensure_deb_src
    log "downloading the kubernetes source package"
    (cd "$WORK_DIR" && apt-get source --download-only kubernetes >&2)
    tarball=$(ls "$WORK_DIR"/kubernetes_*.orig.tar.gz | head -n1)
  fi
  if [ ! -f "$WORK_DIR/src/Makefile" ]; then
    log "unpacking $tarball"
    rm -rf "$WORK_DIR/src" && mkdir -p "$WORK_DIR/src"
    tar -xzf "$tarball" -C "$WORK_DIR/src" --strip-components=1
  fi
}

patch_reflect2() {
  local vendored="$WORK_DIR/src/vendor/github.com/modern-go/reflect2"
  if [ ! -f "$vendored/.flotilla-patched" ]; then
    log "replacing vendored reflect2 with Debian's 1.0.2 (Go >= 1.18 compatible)"
    rm -rf "$vendored"
    cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 "$vendored"
    find "$vendored" -name '*_test.go' -delete
    touch "$vendored/.flotilla-patched"
  fi
}

build() {
  local src="$WORK_DIR/src"
  mkdir -p "$src/.go/src/k8s.io"
  ln -sfn ../../.. "$src/.go/src/k8s.io/kubernetes"
  log "building ${BINARIES[*]} (about 7 minutes on 2 cores)"
  (
    cd "$src"
    export GOPATH="$src/.go" CGO_ENABLED=0 HOME="${HOME:-/root}"
    export KUBE_GIT_VERSION="v$KUBE_VERSION" KUBE_GIT_TREE_STATE=clean
    make WHAT="${BINARIES[*]/#/cmd/}" >&2
  )
  mkdir -p "$BIN_DIR"
  local out
  for b in "${BINARIES[@]}"; do
    out=$(find "$src/_output" -type f -name "$b" -perm -u+x | head -n1)
    install -m 0755 "$out" "$BIN_DIR/$b.tmp"
    mv "$BIN_DIR/$b.tmp" "$BIN_DIR/$b"
  done
}

all_cached() {
  local b
  for b in "${BINARIES[@]}"; do
    [ -x "$BIN_DIR/$b" ] || return 1
  done
}

main() {
  if all_cached; then
    ensure_packages
    echo "$BIN_DIR"
    return
  fi
  mkdir -p "$WORK_DIR"
  ensure_packages
  fetch_source
  patch_reflect2
  build
  log "cached in $BIN_DIR; removing the build tree"
  rm -rf "$WORK_DIR/src"
  echo "$BIN_DIR"
}

main "$@"
