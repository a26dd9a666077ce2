#!/usr/bin/env bash
# Speed of `mtr review` on a 100k-item audit; see README.md. Args: [work dir] [runs]
# The mtr binary is a release build; the generator and client (an example) need no speed.
set -euo pipefail
cd "$(dirname "$0")/../.."
work="${1:-${TMPDIR:-/tmp}/mtr-review-scale}"
runs="${2:-5}"
cargo build --release -q --bin mtr
cargo build -q --example review_scale
exec target/debug/examples/review_scale "$work" target/release/mtr "$runs"
