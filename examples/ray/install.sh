#!/usr/bin/env bash
# Installs Ray Data into its own virtual environment, once: ${MTR_RAY_VENV:-~/.cache/mtr/ray-venv}.
# Idempotent (a venv that already imports ray is kept). The version is pinned so that the
# example and its test run the same Ray everywhere.
set -euo pipefail
RAY_VERSION="${MTR_RAY_VERSION:-2.60.0}"
VENV="${MTR_RAY_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/mtr/ray-venv}"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import ray, ray.data" 2>/dev/null; then
  echo "ray: $("$VENV/bin/python" -c 'import ray; print(ray.__version__)') in $VENV"
  exit 0
fi
start=$(date +%s)
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q "ray[data]==$RAY_VERSION"
echo "ray: $("$VENV/bin/python" -c 'import ray; print(ray.__version__)') installed in $VENV in $(( $(date +%s) - start )) s"
