"""The drafter of benchmarks/bench_drafter.py: a decoder of real shape (seeded random weights, bf16),
its one-token step over a KV cache, and the depth-5 loop with dyadic24's custom op inside (what
torch.compile compiles whole). Only time is measured with it; its logits are what the proposals are
checked on.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as nnf

DEPTH = 5
TAU = 0.7
BF16 = torch.bfloat16


@dataclass(frozen=True)
class Shape:
    """A drafter's dimensions: one token per row and position (decode)."""

    title: str
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    layers: int
    context: int


MODELS = {
    "h4096": Shape(
        "H 4,096, V 151,936 (Qwen3-8B-shaped EAGLE-3 layer)", 4096, 32, 8, 128, 12288, 151_936, 1, 2048
    ),
    "h7168": Shape(
        "H 7,168, V 163,840 (DeepSeek-V3 / Kimi K2-shaped MTP layer)",
        7168,
        56,
        8,
        128,
        18432,
        163_840,
        1,
        2048,
    ),
}
SMOKE_MODEL = Shape("smoke: H 64, V 1,000", 64, 4, 2, 16, 128, 1000, 1, 16)


# ---------------------------------------------------------------- the drafter


def rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * weight


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of x [B, heads, 1, D] at one position (cos, sin [D / 2], float32)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)


class Drafter(torch.nn.Module):
    """A drafter of ``shape`` with seeded random bf16 weights (see the module docstring)."""

    def __init__(self, shape: Shape, device: torch.device, seed: int) -> None:
        super().__init__()
        self.shape = shape
        gen = torch.Generator(device=device).manual_seed(seed)
        h, q_dim = shape.hidden, shape.heads * shape.head_dim
        kv_dim = shape.kv_heads * shape.head_dim

        def weight(*dims: int, std: float) -> torch.nn.Parameter:
            t = torch.empty(dims, dtype=BF16, device=device).normal_(0.0, std, generator=gen)
            return torch.nn.Parameter(t, requires_grad=False)

        def ones(n: int) -> torch.nn.Parameter:
            return torch.nn.Parameter(torch.ones(n, dtype=BF16, device=device), requires_grad=False)

        # logits = rms(x) . emb[v]: std 4 / sqrt(H) gives logits of about N(0, 16), as bench_propose's
        self.emb = weight(shape.vocab, h, std=4.0 / h**0.5)
        self.norm_e, self.norm_h, self.norm_f = ones(h), ones(h), ones(h)
        self.fc = weight(h, 2 * h, std=0.5 / (2 * h) ** 0.5)
        self.ln1 = torch.nn.ParameterList([ones(h) for _ in range(shape.layers)])
        self.ln2 = torch.nn.ParameterList([ones(h) for _ in range(shape.layers)])
        self.wqkv = torch.nn.ParameterList(
            [weight(q_dim + 2 * kv_dim, h, std=h**-0.5) for _ in range(shape.layers)]
        )
        self.wo = torch.nn.ParameterList(
            [weight(h, q_dim, std=0.5 * q_dim**-0.5) for _ in range(shape.layers)]
        )
        self.wgu = torch.nn.ParameterList(
            [weight(2 * shape.intermediate, h, std=h**-0.5) for _ in range(shape.layers)]
        )
        self.wd = torch.nn.ParameterList(
            [weight(h, shape.intermediate, std=0.5 * shape.intermediate**-0.5) for _ in range(shape.layers)]
        )
        # rotary tables at the drafted positions context + p (base 10,000)
        inv = 1.0 / 10000.0 ** (torch.arange(0, shape.head_dim, 2, device=device).float() / shape.head_dim)
        angles = (shape.context + torch.arange(DEPTH, device=device).float())[:, None] * inv[None, :]
        self.cos, self.sin = angles.cos(), angles.sin()

    def make_cache(self, batch: int, gen: torch.Generator) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Each layer's K and V [B, KV heads, context + depth, head_dim], the context random."""
        s = self.shape
        dims = (batch, s.kv_heads, s.context + DEPTH, s.head_dim)
        dev = self.emb.device

        def rand() -> torch.Tensor:
            return torch.empty(dims, dtype=BF16, device=dev).normal_(0.0, 1.0, generator=gen)

        return [(rand(), rand()) for _ in range(s.layers)]

    def step(
        self, tok: torch.Tensor, h_prev: torch.Tensor, p: int, cache: list[tuple[torch.Tensor, torch.Tensor]]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Position p of the draft: (bf16 logits [B, V], hidden [B, H])."""
        s = self.shape
        b = tok.shape[0]
        q_dim, kv_dim = s.heads * s.head_dim, s.kv_heads * s.head_dim
        e = nnf.embedding(tok, self.emb)
        x = nnf.linear(torch.cat((rms_norm(e, self.norm_e), rms_norm(h_prev, self.norm_h)), dim=-1), self.fc)
        slot = s.context + p
        for layer in range(s.layers):
            qkv = nnf.linear(rms_norm(x, self.ln1[layer]), self.wqkv[layer])
            q = qkv[:, :q_dim].reshape(b, s.heads, 1, s.head_dim)
            k = qkv[:, q_dim : q_dim + kv_dim].reshape(b, s.kv_heads, 1, s.head_dim)
            v = qkv[:, q_dim + kv_dim :].reshape(b, s.kv_heads, 1, s.head_dim)
            q, k = rotate(q, self.cos[p], self.sin[p]), rotate(k, self.cos[p], self.sin[p])
            k_cache, v_cache = cache[layer]
            k_cache[:, :, slot : slot + 1].copy_(k)
            v_cache[:, :, slot : slot + 1].copy_(v)
            att = nnf.scaled_dot_product_attention(
                q, k_cache[:, :, : slot + 1], v_cache[:, :, : slot + 1], enable_gqa=True
            )
            x = x + nnf.linear(att.reshape(b, q_dim), self.wo[layer])
            gate, up = nnf.linear(rms_norm(x, self.ln2[layer]), self.wgu[layer]).chunk(2, dim=-1)
            x = x + nnf.linear(nnf.silu(gate) * up, self.wd[layer])
        return nnf.linear(rms_norm(x, self.norm_f), self.emb), x


def draft_loop(
    model: Drafter,
    tok0: torch.Tensor,
    hid0: torch.Tensor,
    cache: list[tuple[torch.Tensor, torch.Tensor]],
    temperature: torch.Tensor,
    seed: torch.Tensor,
    rnd: torch.Tensor,
    positions: torch.Tensor,
    fp32: bool,
) -> tuple[list[torch.Tensor], list[tuple[torch.Tensor, ...]]]:
    """The whole depth-5 loop with the custom op: what dyadic24-compiled compiles (its logits and its
    proposals per position)."""
    tok, h = tok0, hid0
    seen: list[torch.Tensor] = []
    outs: list[tuple[torch.Tensor, ...]] = []
    for p in range(DEPTH):
        logits, h = model.step(tok, h, p, cache)
        if fp32:
            logits = logits.float()
        out = torch.ops.dyadic24.propose(logits, temperature, seed, rnd, positions[p], TAU)
        tok = out[1].long().clamp_min(0)  # (a failed row's token is -1, clause 2.3)
        seen.append(logits)
        outs.append(tuple(out))
    return seen, outs
