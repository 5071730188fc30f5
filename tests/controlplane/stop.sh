#!/usr/bin/env bash
#! Stops what start.sh (and run-all.sh) started: only the processes named by pid files in the state
#! directory, each checked to still be the process that was recorded. Certificates and logs stay.
set -euo pipefail

STATE="${FLOTILLA_CONTROLPLANE_DIR:-/tmp/flotilla-controlplane}"

log() { printf '[controlplane] %s\n' "$*" >&2; }

# stop NAME EXPECTED: TERM (then KILL after 10 s) the recorded pid if it still runs EXPECTED.
stop() {
  local pidfile="$STATE/pids/$1.pid" pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$2"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
      [ -e "/proc/$pid" ] || break
      sleep 0.2
    done
    if [ -e "/proc/$pid" ]; then
      log "$1 (pid $pid) ignored TERM; killing"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    log "stopped $1 (pid $pid)"
  fi
  rm -f "$pidfile"
}

for n in 1 2; do stop "node-sim$n" "node-sim"; done
for n in 1 2; do stop "controller-manager$n" kube-controller-manager; done
for n in 1 2; do stop "apiserver$n" kube-apiserver; done
stop etcd etcd
