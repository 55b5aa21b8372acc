"""The kernels' binary32 exp (clause 5.3): table lookup, flagging, slices of the exhaustive sweep."""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

from dyadic24.kernels.backend import select_backend  # noqa: E402

select_backend()

import mpmath  # noqa: E402
import triton.language as tl  # noqa: E402

from dyadic24.kernels import exp_jit, exp_sweep_jit  # noqa: E402
from dyadic24.kernels.exp_sweep import FULL_RANGE, sweep  # noqa: E402
from dyadic24.kernels.exp_table import TABLE_PATH, build_table, load_table, parse_table  # noqa: E402
from dyadic24.kernels.propose import kernel_device  # noqa: E402
from dyadic24.reference.exp_exact import exp32  # noqa: E402

DEVICE = kernel_device()
BLOCK = 1024

pytestmark = pytest.mark.skipif(not TABLE_PATH.is_file(), reason="exp_near_midpoints.json not generated yet")


@triton.jit  # type: ignore[untyped-decorator]
def _exp_kernel(z_ptr, tab_z, tab_e, tab_n, out_ptr, flag_ptr, TAB_ITERS: tl.constexpr, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    r, flagged, found = exp_jit.exp_binary32(tl.load(z_ptr + i), tab_z, tab_e, tab_n, TAB_ITERS)
    tl.store(out_ptr + i, r)
    tl.store(flag_ptr + i, flagged.to(tl.int64) + 2 * found.to(tl.int64))


@triton.jit  # type: ignore[untyped-decorator]
def _indep_kernel(z_ptr, out_ptr, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    z = tl.load(z_ptr + i)
    tl.store(out_ptr + i, exp_sweep_jit.independent_exp64(z))


def _run_exp(zs: list[int], table: Any = None) -> tuple[list[int], list[int]]:
    tab = table or load_table(DEVICE)
    padded = zs + [0x80000000] * (-len(zs) % BLOCK)
    z = torch.tensor(padded, dtype=torch.int64, device=DEVICE)
    out = torch.empty_like(z)
    flags = torch.empty_like(z)
    grid = (len(padded) // BLOCK,)
    _exp_kernel[grid](z, tab.z, tab.e, tab.size, out, flags, TAB_ITERS=tab.iterations, BLOCK=BLOCK)
    return out.cpu().tolist()[: len(zs)], flags.cpu().tolist()[: len(zs)]


def _table_doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(TABLE_PATH.read_text())
    return doc


def test_table_entries_and_neighbours() -> None:
    """clause 5.3 at its hardest inputs: every table z and its neighbours, against the exact exp."""
    entries = [int(e["z"], 16) for e in _table_doc()["entries"]]
    zs = sorted({z + d for z in entries for d in range(-4, 5) if FULL_RANGE[0] <= z + d <= FULL_RANGE[1]})
    got, _ = _run_exp(zs)
    for z, r in zip(zs, got, strict=True):
        assert r == exp32(z), f"z={z:08x}"


def test_lanes_close_to_a_midpoint_are_flagged_and_found() -> None:
    """A table z within 2^-49.5 of a midpoint must take the table path (the flag is not too narrow)."""
    doc = _table_doc()
    close = [int(e["z"], 16) for e in doc["entries"] if float(e["rel_distance_log2"]) < -49.5]
    assert close, "the table has entries this close"
    _, flags = _run_exp(close)
    assert all(f == 3 for f in flags)


def test_special_and_random_inputs() -> None:
    """exp(+-0) = 1, exp(-inf) = +0, z < -104 gives +0, the subnormal range, and random z (clause 5.3)."""
    rng = random.Random(11)
    special = [
        0x00000000, 0x80000000, 0xFF800000, 0xC2D00000, 0xC2D00001, 0xC2CFFFFF, 0xC2CFF000,
        0xC2AEAC50, 0xC2AEAC4F, 0xC2AEAC51, 0x80000001, 0xB3000000, 0xB2800000, 0xC3000000,
    ]  # fmt: skip
    zs = special + [rng.randrange(FULL_RANGE[0], FULL_RANGE[1] + 1) for _ in range(6000)]
    zs += [0xC2000000 | rng.getrandbits(22) for _ in range(2000)]  # around exp's subnormal results
    got, _ = _run_exp(zs)
    for z, r in zip(zs, got, strict=True):
        assert r == exp32(z), f"z={z:08x}"


def test_independent_check_is_accurate() -> None:
    """The sweep's independent binary64 exp stays far inside its 2^-44 margin (2^-47 here)."""
    rng = np.random.default_rng(12)
    edges = [0.0, -104.0, -87.33, -103.97]
    z = np.concatenate([-rng.uniform(0, 104, 3000), -rng.uniform(0, 1e-6, 500), edges])
    zt = torch.tensor(np.concatenate([z, np.zeros(-len(z) % BLOCK)]), dtype=torch.float64, device=DEVICE)
    out = torch.empty_like(zt)
    _indep_kernel[(zt.numel() // BLOCK,)](zt, out, BLOCK=BLOCK)
    y = out.cpu().numpy()[: len(z)]
    mpmath.mp.prec = 120
    mpf = mpmath.mpf
    worst = max(abs(mpf(float(b)) / mpmath.exp(mpf(float(a))) - 1) for a, b in zip(z, y, strict=True))
    assert worst < mpmath.mpf(2) ** -47


SLICES = [
    (0x80000000, 0x80000FFF),  # tiny |z|: results 1
    (0xB2FFF800, 0xB3000800),  # exp(z) near 1 - 2^-25: the densest near-midpoint region
    (0xC2AEAC00, 0xC2AEB000),  # exp(z) near 2^-126, the normal / subnormal boundary
    (0xC2CE8000, 0xC2CE9000),  # exp(z) near 2^-150, the midpoint between +0 and the least subnormal
    (0xC2CFF000, 0xC2D00000),  # up to z = -104
]


@pytest.mark.parametrize(("start", "stop"), SLICES)
def test_sweep_slices(start: int, stop: int) -> None:
    """The exhaustive sweep's machinery on slices: zero mismatches, every flagged lane in the table."""
    report = sweep(start, stop, chunk=4096, block=1024, device=DEVICE)
    assert report.passed, report
    assert report.mismatches == 0 and report.flagged_missing == 0


def test_sweep_around_table_entries() -> None:
    """Around near-midpoint z: both exp paths pass, and the finish's hardware path (clause5_hw_jit) is
    unsure wherever the integer routine flags a lane (it hands those to the routine and its table)."""
    for entry in _table_doc()["entries"][:: max(1, len(_table_doc()["entries"]) // 8)]:
        z = int(entry["z"], 16)
        report = sweep(max(FULL_RANGE[0], z - 64), min(FULL_RANGE[1], z + 64), chunk=4096, device=DEVICE)
        assert report.passed, report
        assert report.hw_mismatches == 0 and report.hw_unsure >= report.flagged
    for z in [int(e["z"], 16) for e in _table_doc()["entries"] if float(e["rel_distance_log2"]) < -49.5]:
        alone = sweep(z, z, chunk=4096, device=DEVICE)
        assert alone.hw_unsure == 1 and alone.flagged == 1, alone


def test_missing_table_is_noticed() -> None:
    """Without the table the flagged lanes are reported as missing, so the sweep would fail."""
    close = [int(e["z"], 16) for e in _table_doc()["entries"] if float(e["rel_distance_log2"]) < -49.5]
    empty = build_table([], DEVICE)
    _, flags = _run_exp(close, table=empty)
    assert all(f == 1 for f in flags)


def test_table_parser_rejects_bad_documents() -> None:
    doc = _table_doc()
    assert len(parse_table(doc)) == doc["count"]
    with pytest.raises(ValueError, match="margin"):
        parse_table({**doc, "margin_log2": -48})  # narrower than the proof needs
    clash = {**doc, "entries": [*doc["entries"], {**doc["entries"][0], "e": "00000000"}], "count": None}
    with pytest.raises(ValueError, match="conflicting"):
        parse_table(clash)
    with pytest.raises(ValueError, match="range"):
        parse_table({**doc, "range": ["80000000", "c2c00000"]})
