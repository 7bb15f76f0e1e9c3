#!/usr/bin/env bash
# Installs the CUDA pieces the lab needs on a machine without a CUDA toolkit: NVRTC (to compile
# kernels to CUBIN and read the ptxas report), the CUDA headers that WMMA and half kernels
# include, libcu++ (CCCL: `<cuda/pipeline>`, `<cuda/barrier>`, and `<nv/target>`, which
# `<cooperative_groups.h>` includes), and the disassemblers `nvdisasm` and `cuobjdump`
# (`harness inspect --sass` reads the SASS of a CUBIN with them). They come from NVIDIA's
# pinned PyPI wheels for CUDA 13.0, the version the GPU machines run, into `.cuda-tools/`
# (git-ignored), where device discovery looks for them. The disassemblers were first published as wheels for CUDA 13.2, so those two are
# pinned at 13.2.51: they only read the CUBIN that NVRTC 13.0 wrote, they compile nothing.
# Usage: tools/install-cuda-tools.sh [DEST]     (idempotent; needs python3 with pip)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/.cuda-tools}
stamp="$dest/.installed-13.0"
wheels=(nvidia-cuda-nvrtc==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-crt==13.0.88
  nvidia-cuda-cccl==13.0.85 nvidia-cuda-nvdisasm==13.2.51 nvidia-cuda-cuobjdump==13.2.51)

if [[ -f $stamp ]] && [[ $(cat "$stamp") == "${wheels[*]}" ]]; then
  echo "CUDA tools already in $dest"
  exit 0
fi

echo "Downloading NVIDIA's CUDA 13.0 NVRTC, headers and libcu++, and nvdisasm/cuobjdump 13.2, from PyPI"
echo "(6 wheels, about 96 MB, once; 140 MB unpacked) into $dest ..."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# --root-user-action: CI and containers run as root; the wheels go into a private folder, not
# into any Python environment, so pip's warning about root does not apply.
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
  --no-deps --no-compile --target "$tmp" "${wheels[@]}"

cu=$tmp/nvidia/cu13
# Built beside the destination and renamed into place: a harness started meanwhile finds no
# NVRTC (and says so), never a library still being copied, whose loading would crash it.
build="$dest.partial"
rm -rf "$build"
mkdir -p "$build/lib" "$build/include" "$build/bin"
# Keep only what discovery, NVRTC and `inspect --sass` use: the two NVRTC libraries (not the
# `.alt` variants, not the static archives), the headers and the two disassemblers.
cp -P "$cu"/lib/libnvrtc.so* "$cu"/lib/libnvrtc-builtins.so* "$build/lib/"
rm -f "$build"/lib/*alt* "$build"/lib/*.a
cp -r "$cu"/include/. "$build/include/"
cp "$cu"/bin/nvdisasm "$cu"/bin/cuobjdump "$build/bin/"
chmod +x "$build"/bin/*
echo "${wheels[*]}" > "$build/${stamp##*/}"
rm -rf "$dest"
mv "$build" "$dest"
echo "CUDA tools (NVRTC 13.0, headers, libcu++, nvdisasm, cuobjdump) installed in $dest ($(du -sh "$dest" | cut -f1))"
