#!/bin/sh
# Installs the pinned npm package of tests/browser (puppeteer-core, which
# drives the distribution's Chromium; it downloads no browser) with
# `npm ci` when it is missing or older than package-lock.json. Idempotent.
# Exits 77 when node, npm or chromium is absent (the dashboard test then
# skips).
set -eu
cd "$(dirname "$0")/../tests/browser"
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || {
	echo "node/npm not installed (scripts/install-deps.sh with CW_TEST_DEPS=1)" >&2
	exit 77
}
command -v chromium >/dev/null 2>&1 || {
	echo "chromium not installed (scripts/install-deps.sh with CW_TEST_DEPS=1)" >&2
	exit 77
}
stamp=node_modules/.package-lock.json
if [ -f "$stamp" ] && [ ! package-lock.json -nt "$stamp" ] && [ -d node_modules/puppeteer-core ]; then
	exit 0
fi
npm ci --no-audit --no-fund --loglevel=error >&2
