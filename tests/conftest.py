"""Test-session setup shared by every test module.

Triton reads TRITON_INTERPRET when it is first imported, so the choice between the GPU and the
CPU interpreter (numpy semantics) is made here, before any test module can import triton. The
check looks for an NVIDIA device node instead of importing torch, so reference-only runs stay
torch-free.
"""

from __future__ import annotations

import os
from pathlib import Path

if "TRITON_INTERPRET" not in os.environ and not Path("/dev/nvidia0").exists():
    os.environ["TRITON_INTERPRET"] = "1"

DEEP = os.environ.get("DYADIC24_DEEP", "") not in ("", "0")
