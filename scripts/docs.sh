#!/bin/sh
# docs.sh renders each service's OpenAPI document (the one the service
# serves at /openapi.json and its tests validate against) into a static
# HTML reference under docs/api/, with Redoc via @redocly/cli, pinned in
# scripts/docs/package.json and its lockfile. Run from anywhere: make docs.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/scripts/docs"
out="$root/docs/api"

command -v npm >/dev/null 2>&1 || { echo "docs: npm (Node.js 20.19 or later) is required" >&2; exit 1; }

# Install exactly the locked versions, once.
if [ ! -x "$tools/node_modules/.bin/redocly" ] || [ "$tools/package-lock.json" -nt "$tools/node_modules/.package-lock.json" ]; then
	(cd "$tools" && npm ci --no-audit --no-fund --loglevel=error)
fi

export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
mkdir -p "$out"
# Every service keeps its document at internal/<service>/httpapi/openapi.json.
found=0
for doc in "$root"/internal/*/httpapi/openapi.json; do
	[ -f "$doc" ] || continue
	service=$(basename "$(dirname "$(dirname "$doc")")")
	"$tools/node_modules/.bin/redocly" build-docs "$doc" --output "$out/$service.html" >/dev/null 2>&1 ||
		{ "$tools/node_modules/.bin/redocly" build-docs "$doc" --output "$out/$service.html"; exit 1; }
	echo "docs: docs/api/$service.html"
	found=$((found + 1))
done
[ "$found" -gt 0 ] || { echo "docs: no internal/*/httpapi/openapi.json found" >&2; exit 1; }
