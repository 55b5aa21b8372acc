"""Representative kernel calls for compute-sanitizer (memcheck, racecheck), checked against the
fast reference: B = 6 rows of V = 163,840 fp32 logits mixing every status, the sampled and greedy
paths and several tiles and merge chunks, with the default plan (the merge's pool top 32 by
merges of the pairs' runs) and with the three-part tile (propose.TILE_3, the default at some batch
sizes); then the same rows' first 160,000 logits in bfloat16 and binary16
through the 16-bit tile (tile16_jit) of 8,192 and 16,384, each row ending in a partial tile. Row 0's
tile of 300 equal maxima and the all -inf row's tiles select their lowest ties bounded by phi; row 0's
block of 512 large values in 64 columns (kernel_rows.py's column_block) takes each tile's exact
fallback, in the 16-bit tile out of line (tile_jit._parts_fallback_call, the call racecheck found
unfenced on ce15189).

    compute-sanitizer --tool memcheck python -m dyadic24.kernels.sanitizer_call
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from dyadic24.kernels.gpu_check import outputs_match
from dyadic24.kernels.propose import (
    TILE_3,
    Plan,
    kernel_device,
    make_outputs,
    make_workspace,
    prepare,
    propose,
)
from dyadic24.reference.fast import propose_fast


def main() -> int:
    rng = np.random.default_rng(7)
    batch, vocab = 6, 163_840
    logits = rng.standard_normal((batch, vocab)).astype(np.float32) * 3
    logits[0, 1000:1300] = 20.0  # 300 equal maxima in one tile: ties bounded by phi
    block = np.arange(40_960, 49_152)  # (in tile 5 of 8,192, tile 2 of 16,384)
    logits[0, block[block % 512 < 32]] += 100.0  # 512 large values in 64 columns: the fallback
    logits[1, 77] = np.nan  # NAN_LOGIT
    logits[2, 5] = np.inf  # POS_INF_LOGIT
    logits[3, :] = -np.inf  # ZERO_MASS
    temperature = np.array([1.0, 1.0, 1.0, 1.0, np.nan, 0.0], dtype=np.float32)  # bad T, greedy
    seed = np.arange(batch, dtype=np.uint64) + np.uint64(1 << 40)
    rnd = np.full(batch, 9, dtype=np.uint64)
    pos = np.full(batch, 1234, dtype=np.uint64)
    dev = kernel_device()  # (the CPU under the interpreter: a check of this module, not of the GPU)
    prepare(dev)
    out = make_outputs(batch, dev)

    def t64(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(a.view(np.int64).copy()).to(dev)

    ok = True
    ws = make_workspace(batch, vocab, dev)  # (the default workspace serves every plan of these tiles)
    default = Plan.for_shape(batch, vocab)
    # (each format's rows with the plans that run them: the reference once per format)
    groups = [(logits, torch.float32, [default, Plan.for_shape(batch, vocab, TILE_3)])]
    # (160,000 = 19 x 8,192 + 4,352 = 9 x 16,384 + 12,544: a partial last tile of a V divisible by 16)
    plans16 = [Plan.for_shape(batch, 160_000, t, itemsize=2) for t in (8192, 16384)]
    groups += [(logits[:, :160_000], dtype, plans16) for dtype in (torch.bfloat16, torch.float16)]
    for rows, dtype, plans in groups:
        x = torch.from_numpy(np.ascontiguousarray(rows)).to(dtype)
        # (clause 1.2: the rule reads a 16-bit logit as its exact binary32 widening)
        ref = propose_fast(x.float().numpy(), temperature, seed, rnd, pos)
        args = (x.to(dev), torch.from_numpy(temperature).to(dev), t64(seed), t64(rnd), t64(pos))
        for plan in plans:
            propose(*args, out=out, workspace=ws, plan=plan)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            got = [t.cpu().numpy() for t in out]
            same = outputs_match(out, ref)
            print(
                f"{dtype}, tile {plan.tile}: statuses",
                got[0].tolist(),
                "tokens",
                got[1].tolist(),
                "match reference:",
                same,
            )
            ok = ok and same
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
