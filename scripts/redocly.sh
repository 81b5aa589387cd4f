#!/bin/sh
# redocly.sh runs the Redocly CLI pinned in scripts/docs/package.json and
# its lockfile (installed there with npm ci, once), with the arguments
# given: sh scripts/redocly.sh lint FILE…. docs.sh and openapi-lint.sh
# run it.
set -eu

tools=$(cd "$(dirname "$0")" && pwd)/docs

command -v npm >/dev/null 2>&1 || { echo "redocly: npm (Node.js 20.19 or later) is required" >&2; exit 1; }

# Install exactly the locked versions, once.
if [ ! -x "$tools/node_modules/.bin/redocly" ] || [ "$tools/package-lock.json" -nt "$tools/node_modules/.package-lock.json" ]; then
	(cd "$tools" && npm ci --no-audit --no-fund --loglevel=error)
fi

export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
exec "$tools/node_modules/.bin/redocly" "$@"
