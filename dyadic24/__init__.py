"""dyadic24: the speculative-decoding proposal rule dyadic24-floor-first-v1.

Sub-packages: ``reference`` (exact and fast references), ``conformance`` (runner, strategies,
mutants), ``vectors`` (golden vectors and their generator), ``kernels`` (Triton; needs torch).
Importing this package or ``dyadic24.reference`` never imports torch.
"""

from dyadic24.api import (
    K_MAX,
    SEMANTIC_ID,
    TAU_DEFAULT_BITS,
    TICKETS,
    ArgumentError,
    Proposal,
    RowTrace,
    Status,
)

__version__ = "1.1.0"

__all__ = [
    "K_MAX",
    "SEMANTIC_ID",
    "TAU_DEFAULT_BITS",
    "TICKETS",
    "ArgumentError",
    "Proposal",
    "RowTrace",
    "Status",
    "__version__",
]
