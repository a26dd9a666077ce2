#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what the tests need (the embedded local model,
# headless Chromium for the leaderboard page test), then format check, clippy, and every test of
# the workspace (unit, integration, end-to-end against the real binary and the real local model).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== installing test dependencies"
bash scripts/setup-local-llm.sh
if [ -x scripts/install-test-deps.sh ]; then bash scripts/install-test-deps.sh; fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== tests"
export MTR_TEST_REQUIRE_LOCAL_MODEL=1
if cargo nextest --version >/dev/null 2>&1; then
  # nextest does not run doctests; they go first so that the run closes on nextest's summary
  cargo test --workspace --locked --doc
  cargo nextest run --workspace --locked --no-fail-fast
else
  cargo test --workspace --locked --no-fail-fast
fi
