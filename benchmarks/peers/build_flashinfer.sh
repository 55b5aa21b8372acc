#!/usr/bin/env bash
# Builds the FlashInfer peer of bench_propose.py, .peers/libfi_topk.so (benchmarks/peers/README.md):
#
#   bash benchmarks/peers/build_flashinfer.sh FLASHINFER_CHECKOUT [CUDA_ARCH]
#
# FLASHINFER_CHECKOUT: a git checkout (or git directory) of github.com/flashinfer-ai/flashinfer; its
# header-only kernels (include/flashinfer) are compiled at FLASHINFER_REF (default: the commit the
# committed benchmark used). CUDA_ARCH defaults to sm_90 (H100 / H200). nvcc and the CUDA toolkit's
# curand headers are needed (CURAND_INCLUDE names them where the toolkit lacks them, as pip's
# nvidia-curand wheel ships them); no GPU is needed to build.
set -euo pipefail
src=${1:?usage: build_flashinfer.sh FLASHINFER_CHECKOUT [CUDA_ARCH]}
arch=${2:-sm_90}
ref=${FLASHINFER_REF:-fb28d7242b3506a2348265962041acc1fb56cca4}
here=$(cd "$(dirname "$0")" && pwd)
out=$(cd "$here/../.." && pwd)/.peers
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$src" archive "$ref" include/flashinfer | tar -x -C "$tmp"
version="$(git -C "$src" show "$ref:version.txt" | tr -d '[:space:]')+$(git -C "$src" rev-parse --short "$ref")"
mkdir -p "$out"
extra=()
if [[ -n ${CURAND_INCLUDE:-} ]]; then extra=(-I"$CURAND_INCLUDE"); fi
nvcc -O3 -std=c++17 -arch="$arch" -shared -Xcompiler -fPIC -w -DFI_VERSION="\"$version\"" \
    -I"$tmp/include" "${extra[@]}" "$here/flashinfer_topk.cu" -o "$out/libfi_topk.so"
echo "built $out/libfi_topk.so: FlashInfer $version, $arch, $(nvcc --version | tail -n 1)"
