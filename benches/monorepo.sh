#!/usr/bin/env bash
#! Benchmark: a monorepo of 3,000 application directories (one ConfigMap of about 8 KB each, all
#! different, in one commit: 26-30 MB of git), an ApplicationSet whose git directories generator
#! picks 1,000 of them (APPS: group 0 of the directories, in groups of APPS), in a RollingSync of
#! three steps. Times
#! `flotilla render` and `flotilla simulate --instant` of it: wall time (best of RUNS), with that
#! run's CPU time (user + system, child processes such as git included, so a loaded machine's
#! waits are told apart) and peak memory.
#!
#!   bash benches/monorepo.sh [FLOTILLA_BINARY]     (default: target/release/flotilla)
#!   DIRS=3000 APPS=1000 RUNS=3 ONLY="render simulate" bash benches/monorepo.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FLOTILLA="${1:-$ROOT/target/release/flotilla}"
DIRS="${DIRS:-3000}"
APPS="${APPS:-1000}"
RUNS="${RUNS:-3}"
ONLY="${ONLY:-render simulate}"
GROUPS_OF_APPS=$(( (DIRS + APPS - 1) / APPS ))
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
REPO="$WORK/monorepo"
# flotilla's temporary checkouts go here, counted at the end.
mkdir -p "$WORK/tmp"
URL=https://git.example.com/acme/monorepo.git

# apps/gG/sS/app-NNNN: group G (the generator reads group g0: APPS directories), step S of 3.
DATA="$(for k in $(seq -w 1 100); do printf '  key-%s: "%s"\n' "$k" "$(printf 'v%.0s' $(seq 1 70))"; done)"
for ((i = 0; i < DIRS; i++)); do
  dir="$REPO/apps/g$((i / APPS))/s$((i % 3 + 1))/app-$(printf %04d "$i")"
  mkdir -p "$dir"
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  app: "%s"\n%s\n' \
    "$i" "$DATA" > "$dir/configmap.yaml"
done
git -C "$REPO" init -q -b main
git -C "$REPO" add -A
git -C "$REPO" -c user.name=bench -c user.email=bench@example.com commit -q -m monorepo
echo "repository: $DIRS directories in $GROUPS_OF_APPS groups, $(du -sh "$REPO/.git" | cut -f1) of git" >&2

cat > "$WORK/appset.yaml" <<YAML
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: monorepo, namespace: flotilla}
spec:
  generators:
    - git:
        repoURL: $URL
        revision: HEAD
        directories:
          - path: apps/g0/*/*
  strategy:
    type: RollingSync
    rollingSync:
      steps:
        - matchExpressions: [{key: step, operator: In, values: [s1]}]
        - matchExpressions: [{key: step, operator: In, values: [s2]}]
        - matchExpressions: [{key: step, operator: In, values: [s3]}]
  template:
    metadata:
      name: '{{path.basename}}'
      labels: {step: '{{path[2]}}'}
    spec:
      project: default
      source: {repoURL: $URL, targetRevision: HEAD, path: '{{path}}'}
      destination: {server: https://kubernetes.default.svc, namespace: '{{path.basename}}'}
      syncPolicy: {syncOptions: [CreateNamespace=true]}
YAML

# Runs "$@" RUNS times; prints the best wall time and that run's CPU time and peak RSS.
measure() {
  local name=$1 best="" cpu="" rss=""
  shift
  for ((run = 0; run < RUNS; run++)); do
    TMPDIR="$WORK/tmp" /usr/bin/time -f '%e %U %S %M' -o "$WORK/time" "$@" > "$WORK/out" 2> "$WORK/err" || {
      cat "$WORK/err" >&2
      exit 1
    }
    read -r seconds user system kb < "$WORK/time"
    if [[ -z $best ]] || awk "BEGIN {exit !($seconds < $best)}"; then
      best=$seconds cpu=$(awk "BEGIN {print $user + $system}") rss=$kb
    fi
  done
  printf '%-40s %8s s wall  %8s s cpu  %6d MB peak RSS  (best of %d)\n' \
    "$name" "$best" "$cpu" $((rss / 1024)) "$RUNS"
}

for command in $ONLY; do
  case $command in
    render) args=(render "$WORK/appset.yaml" --repo "$URL=$REPO" -o name) ;;
    simulate) args=(simulate "$WORK/appset.yaml" --repo "$URL=$REPO" --instant -o name) ;;
  esac
  measure "$command ($APPS Applications)" "$FLOTILLA" "${args[@]}"
  [[ $(wc -l < "$WORK/out") -eq $APPS ]] || { echo "$command: expected $APPS Applications" >&2; exit 1; }
done
echo "temporary directories left behind: $(find "$WORK/tmp" -mindepth 1 -maxdepth 1 | wc -l)" >&2
