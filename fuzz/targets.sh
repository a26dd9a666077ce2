#!/usr/bin/env bash
# Lists the fuzz targets that a build with the features given (space- or comma-separated; `full`
# is every feature) has: the targets without required features, and those whose feature is
# given. Usage: fuzz/targets.sh [FEATURES]
set -euo pipefail
cd "$(dirname "$0")"
features=" $(echo "${1:-}" | tr ',' ' ') "
awk -v features="$features" '
  /^\[/ { if (name != "") emit(); name = ""; req = ""; inbin = ($0 == "[[bin]]") }
  inbin && /^name = / { gsub(/"/, "", $3); name = $3 }
  /^required-features = / { match($0, /"[^"]+"/); req = substr($0, RSTART + 1, RLENGTH - 2) }
  function emit() {
    if (req == "" || index(features, " full ") || index(features, " " req " ")) print name
  }
  END { if (name != "") emit() }
' Cargo.toml
