"""Representative kernel calls for compute-sanitizer (memcheck, racecheck), checked against the
fast reference: B = 6 rows of V = 163,840 fp32 logits mixing every status, the sampled and greedy
paths and several tiles and merge chunks, with the default plan (the merge's pool top 32 by
merges of the pairs' runs), with Triton's own top-k (``pool_run`` 1, the default past
propose.MERGE_RUN_PROGRAMS tile programs) and with the three-part tile (propose.TILE_3, the
default at some batch sizes).

    compute-sanitizer --tool memcheck python -m dyadic24.kernels.sanitizer_call
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np
import torch

from dyadic24.kernels.propose import TILE_3, Plan, make_outputs, make_workspace, prepare, propose
from dyadic24.reference.fast import propose_fast


def main() -> int:
    rng = np.random.default_rng(7)
    batch, vocab = 6, 163_840
    logits = rng.standard_normal((batch, vocab)).astype(np.float32) * 3
    logits[1, 77] = np.nan  # NAN_LOGIT
    logits[2, 5] = np.inf  # POS_INF_LOGIT
    logits[3, :] = -np.inf  # ZERO_MASS
    temperature = np.array([1.0, 1.0, 1.0, 1.0, np.nan, 0.0], dtype=np.float32)  # bad T, greedy
    seed = np.arange(batch, dtype=np.uint64) + np.uint64(1 << 40)
    rnd = np.full(batch, 9, dtype=np.uint64)
    pos = np.full(batch, 1234, dtype=np.uint64)
    dev = torch.device("cuda")
    prepare(dev)
    out = make_outputs(batch, dev)

    def t64(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(a.view(np.int64).copy()).to(dev)

    ref = propose_fast(logits, temperature, seed, rnd, pos)
    default = Plan.for_shape(batch, vocab)
    ok = True
    ws = make_workspace(batch, vocab, dev)  # (the default workspace serves every plan of these tiles)
    for plan in (default, replace(default, pool_run=1), Plan.for_shape(batch, vocab, TILE_3)):
        propose(torch.from_numpy(logits).to(dev), torch.from_numpy(temperature).to(dev), t64(seed), t64(rnd),
                t64(pos), out=out, workspace=ws, plan=plan)  # fmt: skip
        torch.cuda.synchronize()
        got = [t.cpu().numpy() for t in out]
        same = all(
            np.array_equal(g, r)
            for g, r in zip(got, (ref.status, ref.token, ref.ids, ref.tickets), strict=True)
        )
        print(
            f"tile {plan.tile}, pool_run {plan.pool_run}: statuses",
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
