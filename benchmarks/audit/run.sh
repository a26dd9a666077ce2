#!/usr/bin/env bash
# Audit throughput on the fake server; see README.md. Args: [turns] [concurrency] [latency_ms] [rewrites 1/0]
set -euo pipefail
cd "$(dirname "$0")/../.."
exec cargo run --release -q -p mtr-audit --example audit_throughput -- "$@"
