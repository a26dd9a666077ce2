#!/usr/bin/env bash
# The Python package's tests, as CI runs them (the last step of scripts/test.sh): builds the
# wheel in the dev profile into the workspace's target folder (the crates are already built
# there by the Rust steps: only pyo3 and the extension compile and link), installs it into a
# fresh venv under that target folder (nothing outside the repository is written but pip's
# download cache), and runs pytest there against the installed wheel.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
venv="$CARGO_TARGET_DIR/python-venv"
wheels="$CARGO_TARGET_DIR/wheels"
python="${MTR_PYTHON:-python3}"

"$python" -m venv --clear "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r python/requirements-test.txt maturin==1.16.0
rm -rf "$wheels"
"$venv/bin/maturin" build --locked --profile dev --interpreter "$venv/bin/python" --out "$wheels"
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps "$wheels"/*.whl

# from python/tests, where `import mtr` finds the installed wheel, not the source folder
cd python/tests
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
