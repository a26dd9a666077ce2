#!/usr/bin/env bash
# Audit throughput on the fake server; see README.md. Args: [turns] [concurrency] [latency_ms]
set -euo pipefail
cd "$(dirname "$0")/../.."
exec cargo run --release -q -p mtr-audit --example audit_throughput -- "$@"
