#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what the tests need (the embedded local model,
# headless Chromium for the leaderboard page test), then format check, clippy, and every test of
# the workspace (unit, integration, end-to-end against the real binary and the real local model).
set -euo pipefail
cd "$(dirname "$0")/.."

# CI builds once: incremental compilation's caches would only take disk (a CI run of
# 2026-12-02 ran out of it while linking the test binaries). The free space is printed at the
# start and the end so that a full disk shows in the log before it fails a build.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi
disk() { echo "== disk: $(df -h --output=avail "${CARGO_TARGET_DIR:-target}" 2>/dev/null | tail -1 | tr -d ' ') free ($1)"; }
mkdir -p "${CARGO_TARGET_DIR:-target}"
disk "before the build"
trap 'disk "at the end"' EXIT

echo "== installing test dependencies"
# mtr's first run moves an installation of the previous layout (~/.cache/mtr) to its folders
cargo run --locked -q --bin mtr -- local paths
bash scripts/setup-local-llm.sh
if [ -x scripts/install-test-deps.sh ]; then bash scripts/install-test-deps.sh; fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== tests"
export MTR_TEST_REQUIRE_LOCAL_MODEL=1
# the Python package first (scripts/test-python.sh: its wheel in a fresh venv, pytest), so
# that the run closes on the Rust tests' summary
echo "== python"
bash scripts/test-python.sh
# a short libFuzzer run of every parser (fuzz/smoke.sh; the long campaign is
# benchmarks/faults/campaign.sh); a crash fails CI with its input under fuzz/artifacts/
echo "== fuzz smoke"
bash fuzz/smoke.sh 3
if cargo nextest --version >/dev/null 2>&1; then
  # nextest does not run doctests; they go first so that the run closes on nextest's summary
  cargo test --workspace --locked --doc
  cargo nextest run --workspace --locked --no-fail-fast
else
  cargo test --workspace --locked --no-fail-fast
fi
