#!/usr/bin/env bash
# Installs the CUDA pieces the lab needs on a machine without a CUDA toolkit: NVRTC (to compile
# kernels to CUBIN and read the ptxas report) and the CUDA headers that WMMA and half kernels
# include. They come from NVIDIA's pinned PyPI wheels for CUDA 13.0, the version the GPU
# machines run, into `.cuda-tools/` (git-ignored), where device discovery looks for them.
# Usage: tools/install-cuda-tools.sh [DEST]     (idempotent; needs python3 with pip)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/.cuda-tools}
stamp="$dest/.installed-13.0"
wheels=(nvidia-cuda-nvrtc==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-crt==13.0.88)

if [[ -f $stamp ]] && [[ $(cat "$stamp") == "${wheels[*]}" ]]; then
  echo "CUDA tools already in $dest"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
  --target "$tmp" "${wheels[@]}"

cu=$tmp/nvidia/cu13
rm -rf "$dest"
mkdir -p "$dest/lib" "$dest/include"
# Keep only what discovery and NVRTC use: the two NVRTC libraries (not the `.alt` variants,
# not the static archives) and the headers.
cp -P "$cu"/lib/libnvrtc.so* "$cu"/lib/libnvrtc-builtins.so* "$dest/lib/"
rm -f "$dest"/lib/*alt* "$dest"/lib/*.a
cp -r "$cu"/include/. "$dest/include/"
echo "${wheels[*]}" > "$stamp"
echo "CUDA tools (NVRTC 13.0 and headers) installed in $dest"
du -sh "$dest" | cut -f1
