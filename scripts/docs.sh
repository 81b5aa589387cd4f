#!/bin/sh
# docs.sh renders each service's OpenAPI document (the one the service
# serves at /openapi.json and its tests validate against) into a static
# HTML reference under docs/api/, with Redoc via @redocly/cli, pinned in
# scripts/docs/package.json and its lockfile (redocly.sh). Run from
# anywhere: make docs.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
redocly="sh $root/scripts/redocly.sh"
out="$root/docs/api"

mkdir -p "$out"
# Every service keeps its document at internal/<service>/httpapi/openapi.json.
found=0
for doc in "$root"/internal/*/httpapi/openapi.json; do
	[ -f "$doc" ] || continue
	service=$(basename "$(dirname "$(dirname "$doc")")")
	$redocly build-docs "$doc" --output "$out/$service.html" >/dev/null 2>&1 ||
		{ $redocly build-docs "$doc" --output "$out/$service.html"; exit 1; }
	echo "docs: docs/api/$service.html"
	found=$((found + 1))
done
[ "$found" -gt 0 ] || { echo "docs: no internal/*/httpapi/openapi.json found" >&2; exit 1; }
