#!/usr/bin/env bash
#! Installs the servers that tests start on loopback and that a fresh machine lacks: Debian's
#! openssh-server (the credentials test starts its own sshd to serve a repository over ssh).
#! Idempotent: returns at once when they are present.
set -euo pipefail

log() { printf '[install-servers] %s\n' "$*" >&2; }

if [ ! -x /usr/sbin/sshd ]; then
  log "installing openssh-server"
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openssh-server >&2
fi
