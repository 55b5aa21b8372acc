"""Searches for inputs on which a plausible mistake changes the OUTPUT arrays (not only the trace).

Registered in ``vectors/search.py``'s ``EXTRA_SEARCHES`` by name; each returns found.json records
(vectors/found_inputs.py: ``found().extra[record]``), re-checked on the exact trace by vectors/checks.py.

* ``philox_mulhi_double`` (clause 9.1; record ``philoxMulhiDouble``): Philox4x32-10 whose 32 x 32 ->
  64-bit products are taken in binary64, hi = floor(RN64(a * b) / 2^32). Seeds whose proposal key
  (clause 9.2) differs, and (seed, round, position) whose block (clause 9.3) differs with the right key,
  kept where a uniform 32-way row (2^19 tickets each, token = u >> 19) draws another token; one of each
  for a first wrong product by M0 and by M1.
* ``p_reciprocal`` (clause 7.1; record ``pReciprocal``): rows [0, z1, z2] (tau = 1, so z = the logit)
  where p = e * RN64(1/S) changes a count against p = RN64(e / S). z1 sweeps every binary32 in
  [-17, -2^-25) (one z per distinct e), z2 a seeded set in (-1, 0).
* ``ftz_exp_tie`` (clause 5.3; record ``ftzExpTie``): V = 32 rows (tau = 1) in which a subnormal e decides
  two chained binary64 ties of the clause-6.2 tree, so that flushing it to zero changes S and the
  tickets. Searches every binary32 z whose e lies in the binades needed for pairs of reachable e
  (e = RN32(exp z)) that sum exactly to a power of two.

Run: ``python -m dyadic24.vectors.search --only philox_mulhi_double p_reciprocal ftz_exp_tie``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from dyadic24.reference.fast_exp import exp32_np
from dyadic24.reference.philox import DOMAIN_WORD, M0, M1, ROUNDS, W0, W1, proposal_key_np
from dyadic24.vectors.rows import words
from dyadic24.vectors.search import F64, TICKETS, U32

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
_M32 = np.uint64(0xFFFFFFFF)
_TWO32 = float(1 << 32)
SEED_STRIDE = 0x9E3779B97F4A7C15  # seeds i * stride mod 2^64: spread over all 64 bits


def _log(msg: str) -> None:
    print(f"[search_edges] {msg}", flush=True)


# ---------------------------------------------------------------- Philox with binary64 products (9.1)


def philox_pair_np(c: tuple[U32, U32, U32, U32], k: tuple[U32, U32]) -> tuple[U32, U32, I64]:
    """Philox4x32-10 with hi = floor(RN64(M * x) / 2^32) (lo32 exact): (x[0], x[1], first) where
    ``first`` is -1 if every high word equals the exact one, else 2 * round + (0 for M0, 1 for M1) of
    the first product whose binary64 high word is wrong (the state up to it equals the exact one)."""
    x0, x1, x2, x3 = (np.asarray(w).astype(np.uint64) for w in c)
    key0, key1 = (np.asarray(w).astype(np.uint64) for w in k)
    x0, x1, x2, x3, key0, key1 = np.broadcast_arrays(x0, x1, x2, x3, key0, key1)
    first = np.full(x0.shape, -1, dtype=np.int64)
    for r in range(ROUNDS):
        if r:
            key0 = (key0 + np.uint64(W0)) & _M32
            key1 = (key1 + np.uint64(W1)) & _M32
        p0 = np.uint64(M0) * x0
        p1 = np.uint64(M1) * x2
        hi0 = np.floor(np.float64(M0) * x0.astype(np.float64) / _TWO32).astype(np.uint64)
        hi1 = np.floor(np.float64(M1) * x2.astype(np.float64) / _TWO32).astype(np.uint64)
        for which, (exact, approx) in enumerate(((p0 >> np.uint64(32), hi0), (p1 >> np.uint64(32), hi1))):
            first = np.where((first < 0) & (exact != approx), 2 * r + which, first)
        x0, x1, x2, x3 = hi1 ^ x1 ^ key0, p1 & _M32, hi0 ^ x3 ^ key1, p0 & _M32
    return x0.astype(np.uint32), x1.astype(np.uint32), first


def _split(v: U64) -> tuple[U32, U32]:
    return (v & _M32).astype(np.uint32), (v >> np.uint64(32)).astype(np.uint32)


def double_key_np(seed: U64) -> tuple[U32, U32, I64]:
    """The proposal key (clause 9.2) with binary64 products, and the first wrong product."""
    lo, hi = _split(seed)
    zero = np.zeros_like(lo)
    return philox_pair_np((np.full_like(lo, DOMAIN_WORD), zero, zero, zero), (lo, hi))


def double_x0_np(k0: U32, k1: U32, round: U64, position: U64) -> tuple[U32, I64]:
    """x[0] of the draw block (clause 9.3) with binary64 products, and the first wrong product."""
    p_lo, p_hi = _split(position)
    n_lo, n_hi = _split(round)
    x0, _, first = philox_pair_np((p_lo, p_hi, n_lo, n_hi), (k0, k1))
    return x0, first


def exact_x0_np(k0: U32, k1: U32, round: U64, position: U64) -> U32:
    from dyadic24.reference.philox import philox4x32_10_np

    p_lo, p_hi = _split(position)
    n_lo, n_hi = _split(round)
    return philox4x32_10_np(p_lo, p_hi, n_lo, n_hi, k0, k1)[0]


def _uniform32_token(x0: U32) -> I64:
    """The token of a row of 32 equal logits: u >> 19 = x[0] >> 27."""
    return (np.asarray(x0, dtype=np.uint32) >> np.uint32(27)).astype(np.int64)


def _product_name(first: int) -> dict[str, Any]:
    """philoxRound counts from 0 (0..9), the multiplier is that of the first wrong product."""
    return {"philoxRound": first // 2, "multiplier": "M1" if first % 2 else "M0"}


KEY_ROUND = 0
BLOCK_SEED = 0x5EED_0000_0000_0001
BLOCK_ROUND = 3


def philox_key_hits(chunk: int = 1 << 21, chunks: int = 16) -> list[dict[str, Any]]:
    """Seeds i * SEED_STRIDE whose binary64-product key differs and whose uniform-32 token differs at
    round KEY_ROUND and the smallest position in [0, 64) where it does; the first hit for a first wrong
    product by M0 and the first by M1."""
    out: dict[str, dict[str, Any]] = {}
    tested = 0
    for ci in range(chunks):
        idx = np.arange(ci * chunk, (ci + 1) * chunk, dtype=np.uint64)
        seed = idx * np.uint64(SEED_STRIDE)  # wraps mod 2^64
        k0, k1 = proposal_key_np(seed)
        d0, d1, first = double_key_np(seed)
        tested += len(seed)
        for i in np.flatnonzero((d0 != k0) | (d1 != k1)):
            name = _product_name(int(first[i]))["multiplier"]
            if name in out:
                continue
            pos = np.arange(64, dtype=np.uint64)
            rnd = np.full(64, KEY_ROUND, dtype=np.uint64)
            good = _uniform32_token(exact_x0_np(k0[i], k1[i], rnd, pos))
            bad = _uniform32_token(double_x0_np(d0[i], d1[i], rnd, pos)[0])
            differ = np.flatnonzero(good != bad)
            if differ.size:
                p = int(differ[0])
                out[name] = {
                    "seed": str(int(seed[i])), "round": str(KEY_ROUND), "position": str(p),
                    **_product_name(int(first[i])), "keyDiffers": True,
                }  # fmt: skip
        if len(out) == 2:
            break
    _log(f"philox key: {tested} seeds tested, hits for {sorted(out)}")
    return [out[m] for m in ("M0", "M1") if m in out]


def philox_block_hits(chunk: int = 1 << 21, chunks: int = 32) -> list[dict[str, Any]]:
    """Positions (seed BLOCK_SEED, round BLOCK_ROUND; the binary64-product key of that seed is right)
    whose binary64-product block draws another uniform-32 token; first hits for M0 and M1."""
    seed = np.array([BLOCK_SEED], dtype=np.uint64)
    k0, k1 = proposal_key_np(seed)
    d0, d1, _ = double_key_np(seed)
    assert d0[0] == k0[0] and d1[0] == k1[0], "pick another BLOCK_SEED: its key is wrong already"
    out: dict[str, dict[str, Any]] = {}
    tested = 0
    for ci in range(chunks):
        pos = np.arange(ci * chunk, (ci + 1) * chunk, dtype=np.uint64)
        rnd = np.full(len(pos), BLOCK_ROUND, dtype=np.uint64)
        good = exact_x0_np(k0, k1, rnd, pos)
        bad, first = double_x0_np(k0, k1, rnd, pos)
        tested += len(pos)
        for i in np.flatnonzero(_uniform32_token(good) != _uniform32_token(bad)):
            name = _product_name(int(first[i]))["multiplier"]
            if name not in out:
                out[name] = {
                    "seed": str(BLOCK_SEED), "round": str(BLOCK_ROUND), "position": str(int(pos[i])),
                    **_product_name(int(first[i])), "keyDiffers": False,
                }  # fmt: skip
        if len(out) == 2:
            break
    _log(f"philox block: {tested} positions tested, hits for {sorted(out)}")
    return [out[m] for m in ("M0", "M1") if m in out]


def philox_records() -> dict[str, Any]:
    t = time.time()
    rec = {"philoxMulhiDouble": {"key": philox_key_hits(), "block": philox_block_hits()}}
    _log(f"philox_mulhi_double: {time.time() - t:.0f} s")
    return rec


# ---------------------------------------------------------------- p = e * RN64(1/S) (clause 7.1)


def distinct_exp(lo_bits: int, hi_bits: int, step: int = 1 << 24) -> tuple[U32, F64]:
    """For binary32 z bit patterns lo_bits..hi_bits (negative z, increasing magnitude): the first z of
    each distinct e = RN32(exp z) (e is monotone in z) and e in binary64."""
    zs: list[U32] = []
    es: list[F64] = []
    prev = None
    for start in range(lo_bits, hi_bits + 1, step):
        b = np.arange(start, min(start + step, hi_bits + 1), dtype=np.uint64).astype(np.uint32)
        e = exp32_np(b.view(np.float32))
        keep = np.ones(len(e), dtype=bool)
        keep[1:] = e[1:] != e[:-1]
        if prev is not None and e[0] == prev:
            keep[0] = False
        prev = e[-1]
        zs.append(b[keep])
        es.append(e[keep].astype(np.float64))
    return np.concatenate(zs), np.concatenate(es)


def p_reciprocal_rows(want: int = 6, z2_count: int = 24, chunk: int = 1 << 23) -> list[list[str]]:
    """Rows [0, z1, z2] (tau = 1) where floor(RN64(e * RN64(1/S)) * 2^24) != floor(RN64(e / S) * 2^24)
    for token 1 or 2 (the argmax is token 0, e = 1). S = RN64(RN64(1 + e1) + e2) is the clause-6.2 tree
    of the slots [1, e1, e2, 0, ...]. At most two rows per z2."""
    t = time.time()
    lo = int(np.float32(-(2.0**-25)).view(np.uint32))  # z in [-2^-25, 0] gives e = 1
    hi = int(np.float32(-17.0).view(np.uint32))
    z1, e1 = distinct_exp(lo, hi)
    _log(f"p_reciprocal: {len(e1)} distinct e for z1 in [-17, -2^-25] ({time.time() - t:.0f} s)")
    z2s = (-(words("p-reciprocal-z2", z2_count) >> np.uint32(8)).astype(np.float64) / 2.0**24).astype(
        np.float32
    )
    z2s = np.where(z2s == 0, np.float32(-0.5), z2s).astype(np.float32)
    e2s = exp32_np(z2s).astype(np.float64)
    out: list[list[str]] = []
    scale = float(TICKETS)
    for z2, e2 in zip(z2s.tolist(), e2s.tolist(), strict=True):
        z2_bits = int(np.float32(z2).view(np.uint32))
        per_z2 = 0
        for a in range(0, len(e1), chunk):
            x = e1[a : a + chunk]
            s = (1.0 + x) + e2
            inv = 1.0 / s
            differ = (np.floor(x / s * scale) != np.floor(x * inv * scale)) | (
                np.floor(e2 / s * scale) != np.floor(e2 * inv * scale)
            )
            for i in np.flatnonzero(differ).tolist():
                if per_z2 < 2 and len(out) < want:
                    out.append([f"{0:08x}", f"{int(z1[a + i]):08x}", f"{z2_bits:08x}"])
                    per_z2 += 1
        if len(out) >= want:
            break
    _log(f"p_reciprocal: {len(out)} rows in {time.time() - t:.0f} s")
    return out


def p_reciprocal_records() -> dict[str, Any]:
    return {"pReciprocal": p_reciprocal_rows()}


# ---------------------------------------------------------------- FTZ of exp deciding a tie (clause 5.3)


def z_bits_range(e_lo: float, e_hi: float) -> tuple[int, int]:
    """Bit patterns (lo <= hi) of every negative binary32 z with exp(z) possibly in [e_lo, e_hi)."""
    a = int(np.float32(np.log(e_hi) * (1 - 1e-6)).view(np.uint32))  # nearer zero: smaller pattern
    b = int(np.float32(np.log(e_lo) * (1 + 1e-6)).view(np.uint32))
    return min(a, b), max(a, b)


def reaching_z(e: npt.NDArray[np.float32], reach: int = 8) -> I64:
    """For binary32 e: the smallest-magnitude binary32 z (bits) within ``reach`` ulps of RN32(log e) with
    RN32(exp z) == e, or 0 where none is."""
    z0 = np.log(e.astype(np.float64)).astype(np.float32).view(np.uint32).astype(np.int64)
    out = np.zeros(len(e), dtype=np.int64)
    for k in range(-reach, reach + 1):
        z = (z0 + k).astype(np.uint32)
        ok = (exp32_np(z.view(np.float32)) == e) & (out == 0)
        out[ok] = (z0 + k)[ok]
    return out


def pairs_summing_to(h: float, want: int = 4) -> tuple[list[tuple[int, int]], int, int]:
    """(z_x, z_y) with RN32(exp z_x) + RN32(exp z_y) == h exactly (a power of two), e_x in [h/2, h);
    every binary32 z with e_x in that binade is tried. Returns some pairs, the count of distinct e_x
    reachable there and the count of pairs found."""
    lo, hi = z_bits_range(h / 2, h)
    z, e = distinct_exp(lo, hi)
    sel = (e >= h / 2) & (e < h)
    z, e = z[sel], e[sel]
    ey = (h - e).astype(np.float32)  # exact: a multiple of ulp32(e_x) below h / 2
    assert np.all(ey.astype(np.float64) + e == h)
    zy = reaching_z(ey)
    hit = np.flatnonzero(zy != 0)
    pairs = [(int(z[i]), int(zy[i])) for i in hit[:want]]
    return pairs, len(e), len(hit)


def subnormal_z() -> int:
    """A z with a subnormal e (z = -100: e = RN32(e^-100), about 2^-144.3)."""
    return int(np.float32(-100.0).view(np.uint32))


def ftz_rows() -> list[dict[str, Any]]:
    """V = 32 rows, tau = 1 (logit = z), slots in ID order:

        0, 1: e_x + e_y = h exactly             -> level 1 node 0 = h, level 2 node 0 = h
        4, 5: e_u + e_v = h * 2^-53 (half an ulp of h), 6: a subnormal e_s
                                                  -> level 2 node 1 = h * 2^-53 + e_s (exact)
        level 3 node 0 = RN64(h + h * 2^-53 + e_s) = h + ulp(h)   (FTZ: a tie, to even: h)
        16.. : e = 1 values summing to T = 2^k with h = T * 2^-53 (half an ulp of T)
        S = RN64(T + h + ulp(h)) = T + 2 h     (FTZ: T + h, a tie, to even: T)

    With FTZ, S = T and every e = 1 slot gets p = 1/T exactly, 2^24 / T tickets; with the subnormal
    kept S = T + ulp(T), p < 1/T, and each e = 1 token but a* loses a ticket to a*. A variant puts
    1 + e_b + e_c = 2 (e_b + e_c = 1 exactly, from pairsToOne) in the right half instead of two 1s.
    """
    from dyadic24.vectors.found_inputs import found

    t = time.time()
    rows: list[dict[str, Any]] = []
    ninf = 0xFF800000
    for top in (2, 4):
        h = top * 2.0**-53
        a_pairs, a_reach, a_count = pairs_summing_to(h)
        b_pairs, b_reach, b_count = pairs_summing_to(h * 2.0**-53)
        _log(
            f"ftz: T = {top}: {a_count} pairs sum to 2^{np.log2(h):.0f} ({a_reach} reachable e in its "
            f"binade), {b_count} to 2^{np.log2(h * 2.0**-53):.0f} ({b_reach})"
        )
        if not a_pairs or not b_pairs:
            continue
        bits = [ninf] * 32
        bits[0], bits[1] = a_pairs[0]
        bits[4], bits[5] = b_pairs[0]
        bits[6] = subnormal_z()
        for j in range(top):
            bits[16 + j] = 0
        rows.append({"top": top, "row": [f"{b:08x}" for b in bits]})
        if top == 2:
            zb, zc = found().pairs_to_one[0]
            variant = list(bits)
            variant[17], variant[18] = zb, zc
            rows.append({"top": 2, "row": [f"{b:08x}" for b in variant]})
    _log(f"ftz_exp_tie: {len(rows)} rows in {time.time() - t:.0f} s")
    return rows


def ftz_records() -> dict[str, Any]:
    return {"ftzExpTie": ftz_rows()}


SEARCHES: dict[str, Callable[[], dict[str, Any]]] = {
    "philox_mulhi_double": philox_records,
    "p_reciprocal": p_reciprocal_records,
    "ftz_exp_tie": ftz_records,
}
