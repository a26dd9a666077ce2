#!/usr/bin/env bash
# Installs what the test suite needs beyond Rust: Debian's headless Chromium for the
# leaderboard page test (tests/e2e/bench.rs) and its WebDriver (chromium-driver) for the review
# page (mtr review). Idempotent; run as root (CI) or with sudo.
# Python 3 (standard library only) is used by the same test for a loose screenshot check.
set -euo pipefail

# Ray Data for the Ray example's test (tests/e2e/batch_file.rs): its own venv in mtr's data
# folder, installed once (about 76 s and 615 MB; the test skips where it is absent).
bash "$(dirname "$0")/../examples/ray/install.sh" || echo "ray: not installed; its test will skip" >&2

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  echo "chromium: $(chromium --version 2>/dev/null || echo present)"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-test-deps: need root (or sudo) to apt-get install chromium" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null
echo "chromium: $(chromium --version 2>/dev/null)"
