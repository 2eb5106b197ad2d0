#!/usr/bin/env bash
# Installs everything the test suite needs, idempotently: Go modules, the
# pinned npm packages (AG-UI schemas and client, @a2a-js/sdk, the real claude,
# codex, gemini and codex-acp CLIs) and staticcheck. Safe to run again: it
# only does work when something is missing or the lock file changed.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "deps: go modules"
go mod download

stamp=node_modules/.agentadaptor-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "deps: npm ci"
  npm ci --no-audit --no-fund
  echo "$want" > "$stamp"
fi

# npm 11 does not run install scripts it has not been told to trust, so the
# real Claude Code binary is put in place explicitly.
if ! node_modules/.bin/claude --version >/dev/null 2>&1; then
  echo "deps: installing the claude native binary"
  node node_modules/@anthropic-ai/claude-code/install.cjs
fi

# codex-acp's launcher runs the native binary of its platform package, an
# optional dependency: npm ci skips one that fails to install without
# failing, so check it runs and fetch it (the pinned version) if not.
if ! node_modules/.bin/codex-acp --help >/dev/null 2>&1; then
  ver=$(node -p 'require("./node_modules/@zed-industries/codex-acp/package.json").version')
  plat=$(node -p 'process.platform + "-" + process.arch')
  echo "deps: installing the codex-acp native binary (@zed-industries/codex-acp-$plat@$ver)"
  npm install --no-save --no-audit --no-fund "@zed-industries/codex-acp-$plat@$ver"
  node_modules/.bin/codex-acp --help >/dev/null
fi

# Debian's Chromium for the browser end-to-end test (playwright-core never
# downloads a browser here), and the test's own pinned packages.
if ! command -v chromium >/dev/null 2>&1; then
  echo "deps: chromium (Debian)"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
fi
bstamp=tests/browser/node_modules/.agentadaptor-lock.sha256
bwant=$(sha256sum tests/browser/package-lock.json | cut -d' ' -f1)
if [ ! -f "$bstamp" ] || [ "$(cat "$bstamp")" != "$bwant" ]; then
  echo "deps: npm ci (tests/browser)"
  npm ci --prefix tests/browser --no-audit --no-fund
  echo "$bwant" > "$bstamp"
fi

if ! command -v staticcheck >/dev/null 2>&1 && [ ! -x "$(go env GOPATH)/bin/staticcheck" ]; then
  echo "deps: staticcheck"
  go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
echo "deps: ok"
