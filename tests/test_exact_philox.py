"""reference.philox against the published Random123 known answers (clauses 9.1-9.4).

Every row of tests/data/random123-philox4x32-10-kat.txt (the published Random123 tests/kat_vectors and
tests/old_kat_vectors, shipped with the repository) must be reproduced by the scalar and by the numpy
Philox.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dyadic24.reference import philox

KAT = Path(__file__).resolve().parent / "data" / "random123-philox4x32-10-kat.txt"


def kat_rows() -> list[tuple[tuple[int, int, int, int], tuple[int, int], tuple[int, int, int, int]]]:
    rows = []
    for line in KAT.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, rounds, *words = line.split()
        assert (name, rounds) == ("philox4x32", "10"), line
        w = [int(x, 16) for x in words]
        assert len(w) == 10, line
        rows.append(((w[0], w[1], w[2], w[3]), (w[4], w[5]), (w[6], w[7], w[8], w[9])))
    return rows


def test_kat_scalar() -> None:
    """Clause 9.1: the scalar Philox4x32-10 reproduces every published row."""
    rows = kat_rows()
    assert len(rows) >= 50
    for counter, key, expected in rows:
        assert philox.philox4x32_10(counter, key) == expected, (counter, key)


def test_kat_numpy() -> None:
    """Clause 9.1: the numpy Philox4x32-10 reproduces every published row, all rows in one call."""
    rows = kat_rows()
    cols = np.array([[*c, *k] for c, k, _ in rows], dtype=np.uint64).astype(np.uint32).T
    got = np.stack(philox.philox4x32_10_np(*cols))
    want = np.array([e for _, _, e in rows], dtype=np.uint64).astype(np.uint32).T
    assert got.dtype == np.uint32
    np.testing.assert_array_equal(got, want)


def test_numpy_matches_scalar_on_random_blocks() -> None:
    rng = np.random.default_rng(17)
    words = rng.integers(0, 1 << 32, size=(6, 2000), dtype=np.uint64).astype(np.uint32)
    got = np.stack(philox.philox4x32_10_np(*words))
    for j in range(words.shape[1]):
        c = tuple(int(v) for v in words[:4, j])
        k = (int(words[4, j]), int(words[5, j]))
        assert tuple(int(v) for v in got[:, j]) == philox.philox4x32_10((c[0], c[1], c[2], c[3]), k)


def test_proposal_key_and_draw_block() -> None:
    """Clauses 9.2-9.4: key from the domain counter and the seed halves; block counter (p, n); u = x0 >> 8."""
    rng = np.random.default_rng(19)
    seed = rng.integers(0, 1 << 64, size=500, dtype=np.uint64)
    rnd = rng.integers(0, 1 << 64, size=500, dtype=np.uint64)
    pos = rng.integers(0, 1 << 64, size=500, dtype=np.uint64)
    seed[:3] = [0, (1 << 64) - 1, 1 << 32]
    k0, k1 = philox.proposal_key_np(seed)
    blocks = philox.draw_block_np(seed, rnd, pos)
    assert blocks.shape == (4, 500) and blocks.dtype == np.uint32
    u = philox.ticket_index_np(blocks)
    for j, (s, n, p) in enumerate(zip(seed.tolist(), rnd.tolist(), pos.tolist(), strict=True)):
        key = philox.proposal_key(s)
        assert key == philox.philox4x32_10((philox.DOMAIN_WORD, 0, 0, 0), (s & 0xFFFFFFFF, s >> 32))[:2]
        assert key == (int(k0[j]), int(k1[j]))
        block = philox.draw_block(s, n, p)
        assert block == philox.philox4x32_10((p & 0xFFFFFFFF, p >> 32, n & 0xFFFFFFFF, n >> 32), key)
        assert block == tuple(int(v) for v in blocks[:, j])
        assert philox.ticket_index(block) == block[0] >> 8 == int(u[j])
        assert 0 <= int(u[j]) < 1 << 24
    assert int.from_bytes(b"prop", "big") == philox.DOMAIN_WORD


def test_draw_depends_on_every_input_word() -> None:
    """Clause 10.1: each of seed, round and position (both halves) changes the block."""
    base = philox.draw_block(0x0123456789ABCDEF, 0x1111111122222222, 0x3333333344444444)
    for s, n, p in ((1 << 40, 0, 0), (1, 0, 0), (0, 1, 0), (0, 1 << 40, 0), (0, 0, 1), (0, 0, 1 << 40)):
        other = philox.draw_block(0x0123456789ABCDEF ^ s, 0x1111111122222222 ^ n, 0x3333333344444444 ^ p)
        assert other != base
