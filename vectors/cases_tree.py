"""golden_tree.json: the clause-6.2 summation tree against other summation orders (clauses 6.1-6.3)."""

from __future__ import annotations

import numpy as np

from dyadic24.api import RowTrace
from dyadic24.vectors.case import NINF, ONE, Case, case, row
from dyadic24.vectors.checks import (
    allocate_slots,
    any_row,
    exact_s,
    slot_e,
    sum_differs,
    tree_sum,
)
from dyadic24.vectors.found_inputs import found

TAU_ONE = ONE


def _interleaved(bits: list[int]) -> bool:
    """Some -inf token lies between finite ones in ID order."""
    finite = [i for i, b in enumerate(bits) if b != NINF]
    return any(bits[i] == NINF for i in range(finite[0], finite[-1] + 1)) if finite else False


def mask_differs(trace: RowTrace) -> bool:
    """Compacting the nonzero slots to the front (ignoring D6) changes S and the tickets."""
    if trace.path != "sampled":
        return False
    vals = slot_e(trace)
    nz = [v for v in vals if v != 0.0]
    packed = nz + [0.0] * (32 - len(nz))
    alt = tree_sum(packed)
    if alt == exact_s(trace):
        return False
    ids = [i for i, v in zip(trace.slot_ids, vals, strict=False) if v != 0.0]
    a = ids.index(trace.argmax)
    t_alt = allocate_slots(packed, alt, a)[: len(nz)]
    t = [t for t, v in zip(trace.slot_tickets, vals, strict=False) if v != 0.0]
    return t_alt != t


def cases() -> list[Case]:
    out = []
    kinds = (
        ("sequential", "tree_vs_sequential", found().rows["tree_sequential"]),
        ("descending", "tree_vs_descending", found().rows["tree_descending"]),
        ("numpy", "tree_vs_numpy", found().rows["tree_numpy"]),
        ("binary32", "sum_binary32", found().rows["tree_binary32"]),
    )
    for kind, flag, rows in kinds:
        for n, bits in enumerate(rows):
            extra = ["neg_inf_interleaved"] if _interleaved(bits) else []
            out.append(
                case(
                    f"{kind} summation gives another S and other tickets (row {n}: a* = 0, e_b + e_c = 1, "
                    "tiny e elsewhere)",
                    [flag, "tau_one", *extra],
                    row(np.array(bits, dtype=np.uint32)),
                    tau_bits=TAU_ONE,
                    checks=[any_row(sum_differs(kind), f"{kind} sum changes S and tickets")],
                )
            )
    for n, bits in enumerate(found().rows["tree_mask"]):
        out.append(
            case(
                f"compacting the finite e values into the first slots changes S and the tickets (row {n})",
                ["mask_shape_matters", "neg_inf_interleaved", "tau_one"],
                row(np.array(bits, dtype=np.uint32)),
                tau_bits=TAU_ONE,
                checks=[any_row(mask_differs, "slot layout matters")],
            )
        )
    return out
