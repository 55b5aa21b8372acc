# mypy: disable-error-code="untyped-decorator"
"""The samplers a serving engineer would pick instead of dyadic24, and the floors, for bench_propose.py.

Each peer draws one token per row from the top 32 logits at temperature tau (or, for vLLM's native
form, from the full vocabulary masked to the top 32), without a host sync, so that it can be captured
in the same depth-5 CUDA graphs as dyadic24:

- torch-topk-softmax-multinomial: torch.topk(32), softmax(v / tau), torch.multinomial;
- torch-race / torch-race-compiled: torch.topk(32), softmax(v / tau), an exponential race (argmax of
  p / E with E ~ Exp(1), the noise drawn in place), eager and under torch.compile (the noise is an
  input: the compiled part has no RNG of its own);
- vllm-native: vLLM's PyTorch sampler for top-k (logits / T, masked below the k-th largest, softmax over
  the whole vocabulary in float32, then the exponential race over the whole vocabulary);
- flashinfer: FlashInfer's top-k kernel (TopKDispatch, the radix / filtered top-k of its top_k_first
  sampling fast path, k = 32, sorted, deterministic), softmax over the 32, FlashInfer's SamplingFromProb
  (benchmarks/peers/flashinfer_topk.cu over FlashInfer's headers, built by build_flashinfer.sh; skipped
  with the reason when the library is not there);
- read-skeleton: the memory floor: programs that read tiles of 4,096 logits and store one maximum per
  tile, the bytes the rule must read at the rate this GPU reads them;
- copy: a device-to-device copy of the logits (reads and writes every byte: twice the skeleton's bytes);
- torch-argmax: the greedy peer; launch-floor: empty kernels, as many as dyadic24 launches.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

K = 32
SKEL_TILE = 4096
FLASHINFER_LIB = Path(
    os.environ.get(
        "DYADIC24_FLASHINFER_LIB", Path(__file__).resolve().parents[1] / ".peers" / "libfi_topk.so"
    )
)
FLASHINFER_DTYPES = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}  # fi_topk's dtype codes


def flashinfer_version() -> str:
    """The FlashInfer version and commit the peer library was built from, or why it is not there."""
    if not FLASHINFER_LIB.is_file():
        return "not built"
    fn = ctypes.CDLL(str(FLASHINFER_LIB)).fi_version
    fn.restype = ctypes.c_char_p
    return str(fn().decode())


@triton.jit
def _tile_max(x_ptr, part_ptr, V, n_tiles, TILE: tl.constexpr):  # type: ignore[no-untyped-def]
    pid = tl.program_id(0)
    row = pid // n_tiles
    offs = (pid - row * n_tiles) * TILE + tl.arange(0, TILE)
    x = tl.load(x_ptr + row.to(tl.int64) * V + offs, mask=offs < V, other=float("-inf"))
    tl.store(part_ptr + pid, tl.max(x))


@triton.jit
def _empty_kernel(x_ptr):  # type: ignore[no-untyped-def]
    pass


def race_topk(logits: torch.Tensor, noise: torch.Tensor, tau: float) -> torch.Tensor:
    """topk(32), softmax(v / tau), exponential race with the given Exp(1) noise: the token IDs [B, 1]."""
    vals, idx = torch.topk(logits, K, dim=-1)
    probs = torch.softmax(vals.float() / tau, dim=-1)
    return torch.gather(idx, 1, (probs / noise).argmax(dim=-1, keepdim=True))


class Peers:
    """The peers' per-position bodies for one (dtype, V, B) case; ``bodies()`` maps name -> body."""

    def __init__(
        self, batch: int, vocab: int, dtype: torch.dtype, tau: float, depth: int, device: str = "cuda"
    ) -> None:
        self.batch, self.vocab, self.dtype, self.tau, self.depth = batch, vocab, dtype, tau, depth
        self.sink = torch.empty(batch, 1, dtype=torch.int64, device=device)
        self.noise = torch.empty(batch, K, dtype=torch.float32, device=device)
        self.full_noise = torch.empty(batch, vocab, dtype=torch.float32, device=device)
        self.temperature = torch.full((batch, 1), tau, dtype=torch.float32, device=device)
        self.k = torch.full((batch,), K, dtype=torch.int64, device=device)
        self.copy_dst = torch.empty(batch, vocab, dtype=dtype, device=device)
        self.n_tiles = -(-vocab // SKEL_TILE)
        self.part = torch.empty(batch * self.n_tiles, dtype=torch.float32, device=device)
        self.dummy = torch.empty(1, device=device)
        self._compiled: Callable[..., Any] | None = None
        self._fi: Any = None
        self.fi_skip: str | None = None

    def topk_softmax_multinomial(self, bufs: list[torch.Tensor]) -> None:
        for p in range(self.depth):
            vals, idx = torch.topk(bufs[p], K, dim=-1)
            probs = torch.softmax(vals.float() / self.tau, dim=-1)
            self.sink.copy_(torch.gather(idx, 1, torch.multinomial(probs, 1)))

    def race(self, bufs: list[torch.Tensor]) -> None:
        for p in range(self.depth):
            self.sink.copy_(race_topk(bufs[p], self.noise.exponential_(), self.tau))

    def race_compiled(self, bufs: list[torch.Tensor]) -> None:
        if self._compiled is None:
            self._compiled = torch.compile(race_topk, dynamic=True, fullgraph=True)
        for p in range(self.depth):
            self.sink.copy_(self._compiled(bufs[p], self.noise.exponential_(), self.tau))

    def vllm_native(self, bufs: list[torch.Tensor]) -> None:
        """vLLM's TopKTopPSampler.forward_native for top-k only (apply_top_k_only, random_sample)."""
        for p in range(self.depth):
            logits = bufs[p].float() / self.temperature
            kth = logits.topk(K, dim=1).values.gather(1, (self.k - 1).unsqueeze(1))
            logits = logits.masked_fill(logits < kth, float("-inf"))
            probs = logits.softmax(dim=-1, dtype=torch.float32)
            self.sink[:, 0].copy_(probs.div_(self.full_noise.exponential_()).argmax(dim=-1))

    def _flashinfer(self) -> Any:
        if self._fi is None and self.fi_skip is None:
            if not FLASHINFER_LIB.is_file():
                self.fi_skip = f"{FLASHINFER_LIB} is not built (benchmarks/peers/README.md)"
            else:
                lib = ctypes.CDLL(str(FLASHINFER_LIB))
                lib.fi_topk.restype = lib.fi_sample.restype = ctypes.c_int
                dev = self.sink.device
                self._fi = {
                    "lib": lib,
                    "states": torch.zeros(1 << 20, dtype=torch.uint8, device=dev),
                    "idx": torch.empty(self.batch, K, dtype=torch.int32, device=dev),
                    "vals": torch.empty(self.batch, K, dtype=self.dtype, device=dev),
                    "out": torch.empty(self.batch, dtype=torch.int32, device=dev),
                    "valid": torch.empty(self.batch, dtype=torch.bool, device=dev),
                    "seed": torch.full((1,), 42, dtype=torch.int64, device=dev),
                    "offset": torch.zeros(1, dtype=torch.int64, device=dev),
                }
        return self._fi

    def flashinfer(self, bufs: list[torch.Tensor]) -> None:
        fi = self._flashinfer()
        if fi is None:
            raise RuntimeError(self.fi_skip)
        lib, stream = fi["lib"], ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        dtype = FLASHINFER_DTYPES[self.dtype]
        for p in range(self.depth):
            st = lib.fi_topk(
                ctypes.c_void_p(bufs[p].data_ptr()),
                dtype,
                ctypes.c_void_p(fi["idx"].data_ptr()),
                ctypes.c_void_p(fi["vals"].data_ptr()),
                self.batch,
                K,
                self.vocab,
                ctypes.c_void_p(fi["states"].data_ptr()),
                stream,
            )
            if st:
                raise RuntimeError(f"FlashInfer TopKDispatch failed: cudaError {st}")
            probs = torch.softmax(fi["vals"].float() / self.tau, dim=-1).contiguous()
            st = lib.fi_sample(
                ctypes.c_void_p(probs.data_ptr()),
                ctypes.c_void_p(fi["out"].data_ptr()),
                ctypes.c_void_p(fi["valid"].data_ptr()),
                self.batch,
                K,
                ctypes.c_void_p(fi["seed"].data_ptr()),
                ctypes.c_void_p(fi["offset"].data_ptr()),
                stream,
            )
            if st:
                raise RuntimeError(f"FlashInfer SamplingFromProb failed: cudaError {st}")
            self.sink.copy_(torch.gather(fi["idx"], 1, fi["out"].long().unsqueeze(1)).long())

    def argmax(self, bufs: list[torch.Tensor]) -> None:
        for p in range(self.depth):
            self.sink[:, 0].copy_(torch.argmax(bufs[p], dim=-1))

    def read_skeleton(self, bufs: list[torch.Tensor]) -> None:
        for p in range(self.depth):
            _tile_max[(self.batch * self.n_tiles,)](
                bufs[p], self.part, self.vocab, self.n_tiles, TILE=SKEL_TILE, num_warps=4
            )

    def copy(self, bufs: list[torch.Tensor]) -> None:
        for p in range(self.depth):
            self.copy_dst.copy_(bufs[p])

    def launch_floor(self, launches: int) -> Callable[[list[torch.Tensor]], None]:
        def body(bufs: list[torch.Tensor]) -> None:
            for _ in range(self.depth * launches):
                _empty_kernel[(1,)](self.dummy)

        return body

    def bodies(self, launches: int) -> dict[str, Callable[[list[torch.Tensor]], None]]:
        return {
            "torch-topk-softmax-multinomial": self.topk_softmax_multinomial,
            "torch-race": self.race,
            "torch-race-compiled": self.race_compiled,
            "vllm-native": self.vllm_native,
            "flashinfer": self.flashinfer,
            "torch-argmax": self.argmax,
            "read-skeleton": self.read_skeleton,
            "copy": self.copy,
            "launch-floor": self.launch_floor(launches),
        }
