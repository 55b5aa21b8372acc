// A minimal C ABI over FlashInfer's sampling kernels, for benchmarks/bench_propose.py's FlashInfer peer.
// FlashInfer's own Python package needs its JIT and a dozen dependencies; the benchmark needs only its
// top-k (TopKDispatch: the radix / filtered top-k of flashinfer/topk.cuh, the kernel of its
// top_k_first sampling fast path) and its sampling kernel (SamplingFromProb). Built with nvcc against
// FlashInfer's own headers by build_flashinfer.sh (not committed; benchmarks/peers/README.md).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <flashinfer/sampling.cuh>
#include <flashinfer/topk.cuh>

using namespace flashinfer;

#ifndef FI_VERSION
#error "FI_VERSION (FlashInfer's version and commit) must be defined: build with build_flashinfer.sh"
#endif

template <typename T>
static cudaError_t topk(void* input, int* indices, void* values, unsigned rows, unsigned k, unsigned len,
                        void* row_states, cudaStream_t stream) {
  return sampling::TopKDispatch<T, int>(static_cast<T*>(input), indices, static_cast<T*>(values), rows, k, len,
                                        static_cast<sampling::RadixRowState*>(row_states), true, true,
                                        sampling::TopKTieBreak::None, stream, false);
}

extern "C" {

// the FlashInfer version and commit the library was built from (bench_propose.py records it)
const char* fi_version() { return FI_VERSION; }

// top-k (sorted, deterministic) of a [rows, len] float32 (dtype 0), bfloat16 (1) or float16 (2) matrix;
// row_states: a zeroed scratch buffer of at least 1 MiB (kept zeroed by the kernel itself).
int fi_topk(void* input, int dtype, int* indices, void* values, unsigned rows, unsigned k, unsigned len,
            void* row_states, cudaStream_t stream) {
  cudaError_t status = cudaErrorInvalidValue;
  if (dtype == 0) {
    status = topk<float>(input, indices, values, rows, k, len, row_states, stream);
  } else if (dtype == 1) {
    status = topk<nv_bfloat16>(input, indices, values, rows, k, len, row_states, stream);
  } else if (dtype == 2) {
    status = topk<half>(input, indices, values, rows, k, len, row_states, stream);
  }
  return static_cast<int>(status);
}

// one draw per row from [rows, d] float32 probabilities (seed and offset per call, as a serving
// engine passes them from device memory under CUDA graphs)
int fi_sample(float* probs, int* output, bool* valid, unsigned rows, unsigned d, unsigned long long* seed,
              unsigned long long* offset, cudaStream_t stream) {
  return static_cast<int>(sampling::SamplingFromProb<float, int>(probs, output, valid, nullptr, rows, d, true,
                                                                 reinterpret_cast<uint64_t*>(seed), 0,
                                                                 reinterpret_cast<uint64_t*>(offset), 0, stream));
}
}
