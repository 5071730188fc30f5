#!/usr/bin/env bash
#! Installs the servers that tests start on loopback and that a fresh machine lacks: Debian's
#! openssh-server (the credentials test starts its own sshd to serve a repository over ssh), and
#! Debian's docker-registry (distribution 2.8.2) with apache2-utils (htpasswd): the Helm test
#! starts its own OCI registry, behind a password, to push charts to and pull them from; and
#! Debian's prometheus (2.42): the metric analysis test starts its own Prometheus, scraping an
#! exporter the test serves, to gate a rollout step on an error rate; and Debian's python3-aiosmtpd:
#! the notifications test starts its own SMTP server to receive the emails the notifier sends.
#! Idempotent: returns at once when they are present.
set -euo pipefail

log() { printf '[install-servers] %s\n' "$*" >&2; }

packages=()
[ -x /usr/sbin/sshd ] || packages+=(openssh-server)
command -v docker-registry >/dev/null || packages+=(docker-registry)
command -v htpasswd >/dev/null || packages+=(apache2-utils)
command -v prometheus >/dev/null || packages+=(prometheus)
/usr/bin/python3 -c 'import aiosmtpd' 2>/dev/null || packages+=(python3-aiosmtpd)
if [ "${#packages[@]}" -gt 0 ]; then
  log "installing ${packages[*]}"
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}" >&2
fi
