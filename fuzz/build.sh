#!/usr/bin/env bash
# Builds the fuzz targets with libFuzzer on the stable toolchain: the coverage instrumentation
# cargo-fuzz asks rustc for is made of stable flags (-C passes, -C llvm-args), and
# libfuzzer-sys compiles libFuzzer itself with the C++ compiler. No nightly, no cargo-fuzz.
# Usage: fuzz/build.sh [--features pipeline] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
export RUSTFLAGS="${RUSTFLAGS:-} -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
features=()
bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --features) features=(--features "$2"); shift 2 ;;
    *) bins+=(--bin "$1"); shift ;;
  esac
done
# an explicit --target keeps RUSTFLAGS off the build scripts and proc macros (built for the
# host without instrumentation, as cargo-fuzz does); binaries land in target/$host/release
host="$(rustc -vV | sed -n 's/^host: //p')"
cargo build --release --locked --target "$host" "${features[@]}" "${bins[@]}"
mkdir -p target/bin
for b in target/"$host"/release/*; do
  if [ -f "$b" ] && [ -x "$b" ]; then
    ln -sf "../$host/release/$(basename "$b")" "target/bin/$(basename "$b")"
  fi
done
