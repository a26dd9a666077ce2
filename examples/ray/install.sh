#!/usr/bin/env bash
# Installs Ray Data into its own virtual environment, once: $MTR_RAY_VENV, default ray-venv in
# mtr's data folder (`mtr local paths`; ~/.local/share/mtr/ray-venv).
# Idempotent (a venv that already imports ray is kept). The version is pinned so that the
# example and its test run the same Ray everywhere.
set -euo pipefail
RAY_VERSION="${MTR_RAY_VERSION:-2.60.0}"
# --- where things go: mtr's data folder, by the rules of mtr_core::dirs (a test keeps this
# block equal to them) ---
if [ -n "${MTR_HOME:-}" ]; then DATA="$MTR_HOME/data"
else DATA="${XDG_DATA_HOME:-${HOME:-${TMPDIR:-/tmp}}/.local/share}/mtr"; fi
# ---
VENV="${MTR_RAY_VENV:-$DATA/ray-venv}"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import ray, ray.data" 2>/dev/null; then
  echo "ray: $("$VENV/bin/python" -c 'import ray; print(ray.__version__)') in $VENV"
  exit 0
fi
start=$(date +%s)
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q "ray[data]==$RAY_VERSION"
echo "ray: $("$VENV/bin/python" -c 'import ray; print(ray.__version__)') installed in $VENV in $(( $(date +%s) - start )) s"
