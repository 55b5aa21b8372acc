"""benchmarks/ncu_source.py, which attributes Nsight Compute's per-instruction counters to source lines
(benchmarks/DESIGN.md "Where the time goes"): its arithmetic on a made-up report, and its
summary of a real one. tests/data/ncu_source/ holds the first 150 instructions of the B = 1 merge's
source counters and SASS from `h200.sh ncu` (2026-12-02, added in 94bca49 as
benchmarks/results/ncu_source/small_b/, whose full summaries this tool reproduced when that folder
was removed, issue 45), with the summary the tool gave for them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "ncu_source"


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


def test_a_real_reports_summary_is_the_tools_output() -> None:
    """A real report's CSV (the full column set, quoted numbers) and nvdisasm -g line table."""
    tool = _tool()
    source = tool._text(DATA / "source_merge_1.csv.gz")
    sass = tool._text(DATA / "merge_1.sass.gz")
    out = tool.summarize(source, sass, 16)
    assert out == (DATA / "summary_merge_1.md").read_text()
    assert out.startswith("1,200 warp instructions executed, 43 warp samples")
