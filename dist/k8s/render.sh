#!/bin/sh
# render.sh — turns executor-template.yaml into the two files the daemon's kubectl template reads: the pod spec as JSON
# without metadata.name (kubectl run names each pod agor-exec-{task_id}) and its image, so both come from one place.
# usage: render.sh [TEMPLATE.yaml [OUTDIR]]   (default: executor-template.yaml here, /etc/agor)
# Needs kubectl (client-side dry run; $KUBECTL overrides the command, e.g. to name a server) and jq.
set -eu
template=${1:-$(dirname "$0")/executor-template.yaml}
out=${2:-/etc/agor}
${KUBECTL:-kubectl} create --dry-run=client --validate=false -o json -f "$template" | jq 'del(.metadata.name)' \
  > "$out/executor-pod.json.new"
image=$(jq -er '.spec.containers[0].image' "$out/executor-pod.json.new") || {
  echo "render.sh: $template has no spec.containers[0].image" >&2
  exit 1
}
printf '%s\n' "$image" > "$out/executor-image"
mv "$out/executor-pod.json.new" "$out/executor-pod.json"
