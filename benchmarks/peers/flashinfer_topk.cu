// A minimal C ABI over FlashInfer's sampling kernels, for benchmarks/bench_propose.py's FlashInfer peer.
// FlashInfer's own Python package needs its JIT and a dozen dependencies; the benchmark needs only its
// top-k (TopKDispatch: the radix / filtered top-k of flashinfer/topk.cuh, the kernel of its
// top_k_first sampling fast path) and its sampling kernel (SamplingFromProb). Built with nvcc against
// FlashInfer's own headers (not committed; benchmarks/peers/README.md says how to fetch them).
#include <cuda_runtime.h>
#include <cuda_bf16.h>

#include <flashinfer/sampling.cuh>
#include <flashinfer/topk.cuh>

using namespace flashinfer;

extern "C" {

// top-k (sorted, deterministic) of a [rows, len] float32 (dtype 0) or bfloat16 (dtype 1) matrix;
// row_states: a zeroed scratch buffer of at least 1 MiB (kept zeroed by the kernel itself).
int fi_topk(void* input, int dtype, int* indices, void* values, unsigned rows, unsigned k, unsigned len,
            void* row_states, cudaStream_t stream) {
  auto* states = static_cast<sampling::RadixRowState*>(row_states);
  cudaError_t status;
  if (dtype == 0) {
    status = sampling::TopKDispatch<float, int>(static_cast<float*>(input), indices, static_cast<float*>(values),
                                                rows, k, len, states, true, true, sampling::TopKTieBreak::None,
                                                stream, false);
  } else {
    status = sampling::TopKDispatch<nv_bfloat16, int>(static_cast<nv_bfloat16*>(input), indices,
                                                      static_cast<nv_bfloat16*>(values), rows, k, len, states,
                                                      true, true, sampling::TopKTieBreak::None, stream, false);
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
