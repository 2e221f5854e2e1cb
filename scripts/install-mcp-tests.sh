#!/bin/sh
# Installs the pinned npm packages of tests/mcp (the official MCP TypeScript
# SDK client and the MCP conformance suite) with `npm ci` when they are
# missing or older than package-lock.json. Idempotent. Exits 77 when node or
# npm is absent (the MCP client tests then skip).
set -eu
cd "$(dirname "$0")/../tests/mcp"
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || {
	echo "node/npm not installed (scripts/install-deps.sh with CW_TEST_DEPS=1)" >&2
	exit 77
}
stamp=node_modules/.package-lock.json
if [ -f "$stamp" ] && [ ! package-lock.json -nt "$stamp" ] &&
	[ -d node_modules/@modelcontextprotocol/sdk ] && [ -d node_modules/@modelcontextprotocol/conformance ]; then
	exit 0
fi
npm ci --no-audit --no-fund --loglevel=error >&2
