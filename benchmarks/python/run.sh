#!/usr/bin/env bash
# mtr.evaluate against pytrec_eval, ir_measures and ranx (bench.py), in one run: makes a venv
# under /tmp with the pinned competitors, builds mtr's wheel (release profile, the workspace's
# target folder) unless WHEEL names one, installs it, and prints times, peak memory, the values
# each tool computed and the ratios. Arguments go to bench.py (--queries, --docs, --repeat).
#
#   bash benchmarks/python/run.sh                      # release wheel, 10k x 1,000
#   WHEEL=target/wheels/mtr-*.whl bash benchmarks/python/run.sh --repeat 1
set -euo pipefail
cd "$(dirname "$0")/../.."

venv="${BENCH_VENV:-/tmp/mtr-bench-venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check \
  pandas==3.1.1 numpy==2.4.6 pytrec-eval-terrier==0.5.11 ir-measures==0.4.3 ranx==0.3.21 maturin==1.16.0

if [ -z "${WHEEL:-}" ]; then
  out=/tmp/mtr-bench-wheel
  rm -rf "$out"
  "$venv/bin/maturin" build --locked --release --interpreter "$venv/bin/python" --out "$out"
  WHEEL=$(ls "$out"/*.whl)
fi
"$venv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps $WHEEL

"$venv/bin/python" benchmarks/python/bench.py "$@"
