#!/usr/bin/env bash
# install.sh installs the reference implementation's packages from the npm
# registry into ref/node_modules (exact versions from package-lock.json).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if [[ -f package-lock.json ]]; then
	npm ci --no-audit --no-fund --loglevel=error
else
	npm install --no-audit --no-fund --loglevel=error
fi
