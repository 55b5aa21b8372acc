"""benchmarks/ncu_source.py, which attributes Nsight Compute's per-instruction counters to source lines
(benchmarks/DESIGN.md "Floors and where the time goes"): its arithmetic on a made-up report, and the
committed summaries in benchmarks/results/ncu_source/ regenerated from the committed raw files."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "ncu_source"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ncu_source", ROOT / "benchmarks" / "ncu_source.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["ncu_source"] = module
    spec.loader.exec_module(module)
    return module


SASS = """
\t//## File "/x/tile_jit.py", line 10
        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
\t//## File "/x/standard.py", line 388
        /*0010*/                   ISETP.GT.AND P0, PT, R4, R5, PT ;
        /*0020*/                   SEL R6, R4, R5, P0 ;
"""
HEADER = (
    '"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)",'
    '"Instructions Executed","stall_long_sb","stall_wait","stall_long_sb (Not Issued)"'
)
CSV = "\n".join([
    '"Kernel Name","tile_kernel",',
    HEADER,
    '"0x7f0000000a00","LDG.E.128 R4","30","30","100","27","3","27"',
    '"0x7f0000000a10","ISETP.GT.AND P0","50","40","300","10","40","10"',
    '"0x7f0000000a20","SEL R6","20","10","600","0","20","0"',
])  # fmt: skip


def test_lines_get_their_instructions_and_samples() -> None:
    out = _tool().summarize(CSV, SASS, 10)
    assert out.startswith("1,000 warp instructions executed, 100 warp samples")
    assert "stall reasons: wait 63.0 %, long_sb 37.0 %" in out
    # standard.py:388: 900 of 1,000 instructions, 70 of 100 samples; tile_jit.py:10: 100 and 30
    assert "| standard.py:388 | 90.0 % | 70.0 % | wait 86 %, long_sb 14 % |" in out
    assert "| tile_jit.py:10 | 10.0 % | 30.0 % | long_sb 90 %, wait 10 % |" in out
    assert out.index("standard.py:388") < out.index("tile_jit.py:10")  # by share of samples


@pytest.mark.parametrize("shape", ["256_163840_1", "256_163840_0", "64_163840_1"])
def test_committed_summaries_are_the_tools_output(shape: str) -> None:
    tool = _tool()
    source = tool._text(RESULTS / f"source_{shape}.csv.gz")
    sass = tool._text(RESULTS / "tile_kernel.sass.gz")
    assert tool.summarize(source, sass, 16) == (RESULTS / f"summary_{shape}.md").read_text()


@pytest.mark.parametrize("name", ["tile_1", "tile_16", "merge_1", "merge_16"])
def test_committed_small_batch_summaries_are_the_tools_output(name: str) -> None:
    """results/ncu_source/small_b: each launch's summary from its source counters and its own cubin."""
    tool = _tool()
    small = RESULTS / "small_b"
    source = tool._text(small / f"source_{name}.csv.gz")
    sass = tool._text(small / f"{name}.sass.gz")
    assert tool.summarize(source, sass, 16) == (small / f"summary_{name}.md").read_text()
