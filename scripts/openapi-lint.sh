#!/bin/sh
# openapi-lint.sh lints every OpenAPI document the platform serves at
# /openapi.json (each service's internal/<service>/httpapi/openapi.json
# and the gateway's merge of them, written by `platform openapi DIR`)
# under Redocly's recommended rules, with the pinned CLI (redocly.sh).
# An error fails; warnings are printed. Run from anywhere: make
# openapi-lint (.ci/run runs it).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

(cd "$root" && go run ./cmd/platform openapi "$out") >/dev/null
set -- "$out"/*.json
[ "$#" -gt 1 ] || { echo "openapi-lint: no documents written" >&2; exit 1; }
sh "$root/scripts/redocly.sh" lint --format=summary "$@"
