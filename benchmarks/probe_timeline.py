"""Timeline of one proposal position: where the dependent chain spends its time.

    python benchmarks/probe_timeline.py --out DIR [--batches 1,4] [--calls 50] [--plan JSON]

Copies of kernels/tile_jit.py, merge_jit.py and finish_jit.py with clock reads inserted at fixed
points (``POINTS``) are imported as separate modules and launched through propose.launch with the
default plan (the tile kernel with a probe buffer as an extra last argument, the merge with it as
its trace buffer). Each read is an inline-PTX ``%globaltimer`` / ``%clock64`` predicated on a value
computed by the stage before it, so it cannot issue before that stage's result exists (a read without
a data dependence may be hoisted by ptxas). Tile programs write their points to probe[pid, :], the
merge program to probe[65536 + row, :]. Per point the report gives the median over calls of the time
since the earliest tile program start (globaltimer, ns, comparable across SMs) and, within one
program, of the clock64 cycles since the program's first point (the merge: since its validated
flags). The probe perturbs what it measures slightly (a point that needs a reduction for its
dependence adds one); it is for attribution, not for headline figures. GPU only (inline PTX does not
run in Triton's interpreter).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dyadic24.kernels import propose as kp

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
MODULES = ("finish_jit", "merge_jit", "tile_jit")  # (in import order: merge_jit imports finish_jit)
MERGE_BASE = 65536
ROW = 64  # int64 words per program in the probe buffer: (globaltimer, clock64) per point
PROBE_HELPER = """

@triton.jit
def _probe(ptr, slot, dep):
    d = dep.to(tl.int64)
    t = tl.inline_asm_elementwise(
        "{ .reg .pred p; setp.ne.s64 p, $1, -7777; @p mov.u64 $0, %globaltimer; @!p mov.u64 $0, 0; }",
        "=l,l", [d], dtype=tl.int64, is_pure=False, pack=1)
    c = tl.inline_asm_elementwise(
        "{ .reg .pred p; setp.ne.s64 p, $1, -7777; @p mov.u64 $0, %clock64; @!p mov.u64 $0, 0; }",
        "=l,l", [d], dtype=tl.int64, is_pure=False, pack=1)
    tl.store(ptr + 2 * slot, t)
    tl.store(ptr + 2 * slot + 1, c)
"""
_P = f"probe_ptr + pid * {ROW}"  # a tile program's row of the probe buffer
_M = f"trace_ptr + ({MERGE_BASE} + row) * {ROW}"  # the merge program's row (its trace buffer)
MERGE_FIRST = 6  # the merge's points from here on
RELOADS = 17  # slot of the merge's reload count (+ 1), not a clock
# (module, name, anchor line(s), statement inserted after it; "@" = the anchor's indentation)
POINTS: list[tuple[str, str, str, str]] = [
    (
        "tile_jit",
        "tile start",
        "    pid = row * n_tiles + tile  # (the program's place in launch order: x fastest)\n",
        f"@_probe({_P}, 0, pid)\n",
    ),
    ("tile_jit", "tile loaded+flags", "    flags = tl.max(words)\n", f"@_probe({_P}, 1, flags)\n"),
    (
        "tile_jit",
        "tile theta (warp bound)",
        "            theta = tl.maximum(tl.min(tl.topk(tl.reshape(gmax, [runs, 32]), K_C // runs)), "
        "SK_NEG_INF)\n",
        f"@_probe({_P}, 2, theta)\n",
    ),
    ("tile_jit", "tile n_sel", "            n_sel = n_gt\n", f"@_probe({_P}, 3, n_sel)\n"),
    (
        "tile_jit",
        "tile indices written",
        "            tl.debug_barrier()  # the indices were written by other threads of this program\n",
        f"@_probe({_P}, 4, n_sel)\n",
    ),
    (
        "tile_jit",
        "tile reloaded+sorted",
        "            tl.store(out + l32, top ^ ktag)\n",
        f"@_probe({_P}, 5, tl.max(top))\n",
    ),
    (
        "merge_jit",
        "merge flags (validated)",
        "            cbase, flags_ptr + row * n_tiles, n_tiles, spec_a, spec_b, spec_f, ktag, ftag, MPOOL_T, "
        "MPOOL_K\n"
        "        )\n",
        f"@_probe({_M}, 6, fmax)\n@tl.store({_M} + 2 * {RELOADS}, _reloads.to(tl.int64) + 1)\n",
    ),
    (
        "merge_jit",
        "merge pool top-32 + pair check",
        "                BY_COUNT, TAGGED, SORTED_C, SRC,\n            )  # fmt: skip\n",
        f"@_probe({_M}, 7, tl.max(best))\n",
    ),
    (
        "finish_jit",
        "finish lane values",
        "        mb = key_bits32(top)\n",
        f"@_probe({_M}, 8, mb + astar + n_valid)\n",
    ),
    (
        "finish_jit",
        "finish slots sorted",
        "    slot_valid = lane < n_valid\n",
        f"@_probe({_M}, 9, tl.max(slot_id))\n",
    ),
    (
        "finish_jit",
        "finish clause 5 (hardware)",
        "    d_f, z_f, e_f, unsure = clause5_hw(lb, mb, rtau)\n",
        f"@_probe({_M}, 10, tl.max(e_f.to(tl.int32, bitcast=True)))\n",
    ),
    (
        "finish_jit",
        "finish clause 5, e in slot order",
        "    ev = tl.gather(ev, src, 0)  # in slot order (clause 6.1)\n",
        f"@_probe({_M}, 11, tl.max(ev.to(tl.int64, bitcast=True)))\n",
    ),
    (
        "finish_jit",
        "finish tree",
        "    lv5 = _tree_level(lv4, lane, 16)  # S in every lane\n",
        f"@_probe({_M}, 12, tl.max(lv5.to(tl.int64, bitcast=True)))\n",
    ),
    (
        "finish_jit",
        "finish tickets",
        "    rem = TICKETS - (total & ((1 << 25) - 1))\n",
        f"@_probe({_M}, 13, tl.max(rem))\n",
    ),
    (
        "finish_jit",
        "finish drawn",
        "    hit = ((incl - tickets) <= u) & (u < incl)\n",
        f"@_probe({_M}, 14, tl.max(hit.to(tl.int32)))\n",
    ),
    (
        "finish_jit",
        "finish stored",
        "    tl.store(tickets_ptr + row * 32 + place, out_t.to(tl.int32))\n",
        f"@_probe({_M}, 15, tl.load(tickets_ptr + row * 32 + 31))\n",
    ),
    # (before the merge's first load of the tiles' words; word is 0 in a merge that waits instead of
    # polling: the sum keeps a tensor to depend on)
    (
        "merge_jit",
        "merge program start",
        "    word, ktag, ftag = row_tags(counter_ptr, row, TAGGED)\n",
        f"@_probe({_M}, 16, word + 0 * row)\n",
    ),
]
# the probe buffer as the tile kernel's last argument, passed on to _tile_fast
SIGNATURES: list[tuple[str, str, str]] = [
    (
        "tile_jit",
        "    V,\n    n_tiles,\n    n_rows,\n    TILE: tl.constexpr,\n",
        "    V,\n    n_tiles,\n    n_rows,\n    probe_ptr,\n    TILE: tl.constexpr,\n",
    ),
    (
        "tile_jit",
        "V, pid, row, tile, TILE,\n",
        "V, pid, row, tile, probe_ptr, TILE,\n",
    ),
    (
        "tile_jit",
        "    tile,\n    TILE: tl.constexpr,\n    SRC: tl.constexpr,\n    TRACE: tl.constexpr,\n",
        "    tile,\n    probe_ptr,\n    TILE: tl.constexpr,\n    SRC: tl.constexpr,\n"
        "    TRACE: tl.constexpr,\n",
    ),
    (
        "tile_jit",
        "    ftag,\n    TILE: tl.constexpr,\n    SRC: tl.constexpr,\n    BY_COUNT: tl.constexpr,\n):",
        "    ftag,\n    probe_ptr,\n    TILE: tl.constexpr,\n    SRC: tl.constexpr,\n"
        "    BY_COUNT: tl.constexpr,\n):",
    ),
    (
        "tile_jit",
        "greedy_fast, ktag, ftag,\n            TILE, SRC, BY_COUNT,\n",
        "greedy_fast, ktag, ftag, probe_ptr,\n            TILE, SRC, BY_COUNT,\n",
    ),
    (
        "merge_jit",
        "from dyadic24.kernels.finish_jit import",
        "from dyadic24.kernels.finish_jit_probed import",
    ),
]


def probed_sources() -> dict[str, str]:
    """The probed copies of the kernel modules (every anchor must occur exactly once)."""
    out = {}
    for module in MODULES:
        src = (KERNELS / f"{module}.py").read_text()
        for mod, old, new in SIGNATURES:
            if mod == module:
                assert src.count(old) == 1, f"{module}: the probe's signature anchor changed: {old!r}"
                src = src.replace(old, new)
        for mod, name, anchor, stmt in POINTS:
            if mod != module:
                continue
            assert src.count(anchor) == 1, f"probe point {name!r}: anchor not unique in {module}.py"
            last = anchor.splitlines()[-1]
            indent = last[: len(last) - len(last.lstrip())]
            src = src.replace(anchor, anchor + stmt.replace("@", indent), 1)
        out[module] = src + PROBE_HELPER
    return out


def load_probed() -> dict[str, Any]:
    """The probed modules, imported as dyadic24.kernels.<module>_probed."""
    tmp = Path(tempfile.mkdtemp())
    mods = {}
    for module, src in probed_sources().items():
        path = tmp / f"{module}_probed.py"
        path.write_text(src)
        spec = importlib.util.spec_from_file_location(f"dyadic24.kernels.{module}_probed", path)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        mods[module] = mod
    return mods


class _WithProbe:
    """A kernel whose launches get the probe buffer as their last positional argument."""

    def __init__(self, kernel: Any, probe: torch.Tensor) -> None:
        self.kernel, self.probe = kernel, probe

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return lambda *args, **kwargs: self.kernel[grid](*args, self.probe, **kwargs)


def run(batch: int, vocab: int, calls: int, options: dict[str, Any], mods: dict[str, Any]) -> dict[str, Any]:
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(7)
    logits = [torch.randn((batch, vocab), device=dev, generator=gen) * 3 for _ in range(8)]
    big = torch.empty(64 << 20, dtype=torch.int8, device=dev)  # evicts L2 between calls
    plan = kp.Plan.for_shape(batch, vocab, **options)
    ws = kp.make_workspace(batch, vocab, dev, plan.tile)
    tab = kp.prepare(dev)
    outs = kp.make_outputs(batch, dev)
    temp = torch.ones(batch, dtype=torch.float32, device=dev)
    seed = torch.arange(batch, dtype=torch.int64, device=dev)
    probe = torch.zeros((MERGE_BASE + batch) * ROW, dtype=torch.int64, device=dev)
    common = (temp.view(torch.int32), seed, seed, seed, tab.z, tab.e, *outs, probe)
    tau_bits = int(np.float32(kp.TAU_DEFAULT).view(np.uint32))
    tile_mod = types.SimpleNamespace(**vars(mods["tile_jit"]))
    tile_mod.tile_kernel = _WithProbe(mods["tile_jit"].tile_kernel, probe)
    setattr(kp, "tile_jit", tile_mod)  # noqa: B010 (launch() reads its kernels from these attributes)
    setattr(kp, "merge_jit", mods["merge_jit"])  # noqa: B010
    n_prog = batch * plan.n_tiles
    samples: list[np.ndarray] = []
    reloads: list[int] = []  # per merge: how often the polling merge reloaded its pool
    for c in range(calls + 3):
        big.zero_()
        probe.zero_()
        kp.launch(plan, logits[c % 8].view(torch.int32), ws, common, tau_bits, tab, trace=False, src=0)
        torch.cuda.synchronize()
        if c >= 3:
            samples.append(probe.view(-1, ROW).cpu().numpy().copy())
    points = [p[1] for p in POINTS]
    glob: dict[str, list[float]] = {n: [] for n in points}
    cyc: dict[str, list[float]] = {n: [] for n in points}
    for s in samples:
        t = s[:, 0::2]
        k = s[:, 1::2]
        tiles_t, tiles_k = t[:n_prog], k[:n_prog]
        start = tiles_t[:, 0].min()
        for i, name in enumerate(points):
            if i < MERGE_FIRST:
                vals = tiles_t[:, i]
                ok = vals > 0
                if ok.any():
                    glob[name].append(float(np.median(vals[ok] - start)))
                    cyc[name].append(float(np.median(tiles_k[ok, i] - tiles_k[ok, 0])))
            else:
                mt = t[MERGE_BASE : MERGE_BASE + batch, i]
                mk = k[MERGE_BASE : MERGE_BASE + batch, i]
                ok = mt > 0
                if ok.any():
                    glob[name].append(float(np.median(mt[ok] - start)))
                    base = k[MERGE_BASE : MERGE_BASE + batch, MERGE_FIRST][ok]
                    cyc[name].append(float(np.median(mk[ok] - base)))
        glob.setdefault("last tile stored", []).append(float(tiles_t[:, MERGE_FIRST - 1].max() - start))
        counts = t[MERGE_BASE : MERGE_BASE + batch, RELOADS]
        reloads.extend(int(c) - 1 for c in counts if c > 0)
    return {
        "B": batch,
        "V": vocab,
        "calls": calls,
        "plan": {"tile": plan.tile, "n_tiles": plan.n_tiles, "tags": plan.tags},
        "ns_since_first_tile_start": {n: float(np.median(v)) for n, v in glob.items() if v},
        "cycles_since_program_start": {n: float(np.median(v)) for n, v in cyc.items() if v},
        "merges": len(reloads),
        "merges_with_reload": sum(1 for r in reloads if r > 0),
        "reloads_max": max(reloads, default=0),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--batches", default="1,4")
    ap.add_argument("--vocab", type=int, default=163_840)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--source", action="store_true", help="print the probed sources and exit (CPU)")
    ap.add_argument(
        "--plan", default="{}", help='Plan.for_shape options as JSON, e.g. \'{"tile": 8192, "stagger": 0}\''
    )
    args = ap.parse_args()
    if args.source:
        for module, src in probed_sources().items():
            print(f"# ---- {module}\n{src}")
        return 0
    mods = load_probed()
    options = json.loads(args.plan)
    runs = [run(int(b), args.vocab, args.calls, options, mods) for b in args.batches.split(",")]
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "plan": options}
    report["runs"] = runs
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "probe_timeline.json").write_text(json.dumps(report, indent=1) + "\n")
    lines = ["| B | point | ns since first tile start | cycles since program start |", "|---:|---|---:|---:|"]
    for r in runs:
        for name, ns in r["ns_since_first_tile_start"].items():
            cycles = r["cycles_since_program_start"].get(name, 0)
            lines.append(f"| {r['B']} | {name} | {ns:.0f} | {cycles:.0f} |")
    for r in runs:
        lines.append(
            f"\nB = {r['B']}: {r['merges_with_reload']} of {r['merges']} merges reloaded their pool "
            f"(at most {r['reloads_max']} times)"
        )
    (args.out / "probe_timeline.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
