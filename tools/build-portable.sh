#!/usr/bin/env bash
# Builds the release harness against an old glibc, so that the binary carried to a GPU machine
# starts there whatever its distribution: cargo-zigbuild links with zig's glibc stubs of the
# version asked for (default 2.28) instead of this machine's glibc.
#
#   tools/build-portable.sh [GLIBC_VERSION]
#
# Needs cargo-zigbuild and zig, both from PyPI: `pip install cargo-zigbuild ziglang`.
# Prints where the binary is and the newest glibc symbol version it needs (read by the binary
# itself: `harness doctor --print glibc`); compare with `ldd --version` on the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."

glibc=${1:-2.28}
target=x86_64-unknown-linux-gnu
if ! command -v cargo-zigbuild >/dev/null; then
  echo "build-portable: cargo-zigbuild is not on PATH: pip install cargo-zigbuild ziglang" >&2
  exit 2
fi
cargo zigbuild --release -p harness --target "$target.$glibc"
bin=target/$target/release/harness
needs=$("$bin" doctor --print glibc)
echo "$bin needs glibc $needs or newer (built against glibc $glibc)"
