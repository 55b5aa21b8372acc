# mypy: disable-error-code="no-untyped-def, untyped-decorator"
"""The tag algebra of the polling merge on crafted words (clause 2.4 across launches; tags_jit).

The merge accepts a word only when it was stored in this launch. Test kernels feed the tag helpers
words stored with this epoch's tag, with every other epoch's, untagged (a plan whose tags do not
apply) and zero-filled (a fresh workspace), and check which are flagged stale and what the accepted
ones untag to; then the merge's polling loop: one reload when its first look was stale and memory is
fresh, and, under the interpreter, its give-up after SPIN_LIMIT reloads when memory stays stale.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from dyadic24.kernels.backend import interpreting, select_backend  # noqa: E402

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from dyadic24.kernels import tags_jit  # noqa: E402
from dyadic24.kernels.merge_jit import (  # noqa: E402
    MERGE_THREADS,
    _copies,
    _one_copy,
    _pool_validated,
    _tagged_lists,
    pool_untag,
)
from dyadic24.kernels.propose import kernel_device  # noqa: E402
from dyadic24.kernels.tags_jit import next_epoch, row_tags, untag_keys  # noqa: E402

DEVICE = kernel_device()
KEY_PAD = -(1 << 63)
EPOCHS = int(tags_jit.EPOCHS.value)
N = 1 << 15  # lanes of the crafted-key kernel


@triton.jit
def _untag_kernel(x_ptr, live_ptr, ktag_ptr, key_ptr, stale_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    k, stale = untag_keys(tl.load(x_ptr + o), tl.load(live_ptr + o) != 0, tl.load(ktag_ptr + o))
    tl.store(key_ptr + o, k)
    tl.store(stale_ptr + o, stale)


@triton.jit
def _row_tags_kernel(counter_ptr, out_ptr):
    row = tl.program_id(0).to(tl.int64)
    word, ktag, ftag = row_tags(counter_ptr, row, True)
    tl.store(out_ptr + row * 4, word.to(tl.int64))
    tl.store(out_ptr + row * 4 + 1, ktag)
    tl.store(out_ptr + row * 4 + 2, ftag.to(tl.int64))
    tl.store(out_ptr + row * 4 + 3, next_epoch(word).to(tl.int64))


@triton.jit
def _pool_untag_kernel(a_ptr, b_ptr, fl_ptr, out_ptr, n_tiles, ktag, ftag, MPOOL_T: tl.constexpr,
                       MPOOL_K: tl.constexpr):  # fmt: skip
    L: tl.constexpr = MPOOL_T // 2 * MPOOL_K
    o = tl.arange(0, L)
    oc, _m = _copies(o, o >= 0)  # (the words as the merge loads them: _pool_loads)
    a, b, fl = tl.load(a_ptr + oc), tl.load(b_ptr + oc), tl.load(fl_ptr + oc)
    q, fmax, stale = pool_untag(a, b, fl, n_tiles, ktag, ftag, MPOOL_T, MPOOL_K)
    tl.store(out_ptr + o, _one_copy(q))
    tl.store(out_ptr + L, fmax.to(tl.int64))
    tl.store(out_ptr + L + 1, stale.to(tl.int64))


@triton.jit
def _validated_kernel(cand_ptr, flags_ptr, a_ptr, b_ptr, fl_ptr, out_ptr, n_tiles, ktag, ftag,
                      MPOOL_T: tl.constexpr, MPOOL_K: tl.constexpr):  # fmt: skip
    L: tl.constexpr = MPOOL_T // 2 * MPOOL_K
    o = tl.arange(0, L)
    oc, _m = _copies(o, o >= 0)
    q, fmax, reloads = _pool_validated(
        cand_ptr, flags_ptr, n_tiles, tl.load(a_ptr + oc), tl.load(b_ptr + oc), tl.load(fl_ptr + oc), ktag,
        ftag, MPOOL_T, MPOOL_K,
    )  # fmt: skip
    tl.store(out_ptr + o, q)
    tl.store(out_ptr + L, fmax.to(tl.int64))
    tl.store(out_ptr + L + 1, reloads.to(tl.int64))


@triton.jit
def _lists_kernel(x_ptr, live_ptr, out_ptr, ktag, N: tl.constexpr):
    o = tl.arange(0, N)
    k, reloads = _tagged_lists(x_ptr + o, tl.load(live_ptr + o) != 0, ktag)
    tl.store(out_ptr + o, k)
    tl.store(out_ptr + N, reloads.to(tl.int64))


def _key(value_key: int, token: int) -> int:
    """A real key (clause 3.1) as a signed int64."""
    k = ((value_key & 0xFFFFFFFF) << 32) | (0xFFFFFFFF - token)
    return k - (1 << 64) if k >= 1 << 63 else k


def _i64(x: int) -> int:
    x &= (1 << 64) - 1
    return x - (1 << 64) if x >= 1 << 63 else x


def _t(a: list[int] | np.ndarray, dtype: Any = None) -> Any:
    t = torch.tensor(np.asarray(a, dtype=np.int64), dtype=torch.int64, device=DEVICE)
    return t if dtype is None else t.to(dtype)


def test_only_words_of_this_epoch_are_accepted() -> None:
    """untag_keys on every (reader epoch, writer) pair: a word written with the reader's tag is accepted
    and untags to the stored key (real keys of IDs up to 2^24 - 1 and KEY_PAD); one written with any
    other epoch's tag, untagged, or zero-filled is stale; a lane that is not live is never stale and
    reads KEY_PAD."""
    rng = np.random.default_rng(3)
    words: list[int] = []
    lives: list[int] = []
    ktags: list[int] = []
    keys: list[int] = []
    want_stale: list[int] = []
    epochs = np.arange(EPOCHS)
    for reader in range(EPOCHS):
        tag = (0x80 + reader) << 24
        # a real key of a random ID (the extreme IDs among them) and value, or KEY_PAD; the writers:
        # this epoch, 12 other epochs, none (untagged), the workspace's zero fill
        others = rng.choice(epochs[epochs != reader], 12, replace=False)
        writers = [("same", reader)] + [("other", int(e)) for e in others]
        writers += [("untagged", -1), ("zero", -1)]
        for j, (kind, epoch) in enumerate(writers):
            token = int(rng.choice([0, 1, (1 << 24) - 1, int(rng.integers(0, 1 << 24))]))
            key = KEY_PAD if j % 5 == 4 else _key(int(rng.integers(-(1 << 31), 1 << 31)), token)
            word = {
                "same": _i64(key ^ tag),
                "other": _i64(key ^ ((0x80 + epoch) << 24)),
                "untagged": key,
                "zero": 0,
            }[kind]
            for live in (True, False):
                words.append(word)
                lives.append(int(live))
                ktags.append(tag)
                keys.append(key if live else KEY_PAD)
                want_stale.append(int(live and kind != "same"))
    n = len(words)
    assert n <= N
    pad = N - n
    x = _t(words + [0] * pad)
    live_t = _t(lives + [0] * pad)
    ktag_t = _t(ktags + [0x80 << 24] * pad)
    out_k = torch.zeros(N, dtype=torch.int64, device=DEVICE)
    out_s = torch.zeros(N, dtype=torch.int32, device=DEVICE)
    _untag_kernel[(1,)](x, live_t, ktag_t, out_k, out_s, N=N)
    stale = out_s.cpu().numpy()[:n]
    assert stale.tolist() == want_stale
    accepted = np.asarray(want_stale) == 0
    assert (out_k.cpu().numpy()[:n][accepted] == np.asarray(keys, dtype=np.int64)[accepted]).all()


def test_row_tags_and_the_next_epoch() -> None:
    """Epoch E tags keys with (0x80 + E) << 24 and flags with (0x80 + E) << 23; the next epoch of the
    last one (EPOCHS - 1) is 0."""
    counter = torch.tensor([e << 24 for e in range(EPOCHS)], dtype=torch.int32, device=DEVICE)
    out = torch.zeros((EPOCHS, 4), dtype=torch.int64, device=DEVICE)
    _row_tags_kernel[(EPOCHS,)](counter, out)
    got = out.cpu().numpy()
    e = np.arange(EPOCHS)
    assert (got[:, 0] == e << 24).all()
    assert (got[:, 1] == (0x80 + e) << 24).all()
    assert (got[:, 2] == (0x80 + e) << 23).all()
    assert (got[:, 3] == ((e + 1) % EPOCHS) << 24).all()


MPOOL_T, MPOOL_K, N_TILES = 8, 4, 6  # 16 lanes: tile t pairs with t + 4 (tiles 6 and 7 do not exist)


def _pool_words(epoch: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                                 int]:  # fmt: skip
    """Sorted lists of N_TILES tiles, tagged with ``epoch``, as the merge's pool reads them: (a, b, the
    flag words in pool layout, the pool of untagged keys, the maximum flag word)."""
    lists = np.sort(rng.integers(-(1 << 62), 1 << 62, size=(N_TILES, 32)), axis=1)[:, ::-1]
    tag = (0x80 + epoch) << 24
    lists = (lists & ~np.int64(0xFFFFFFFF)) | (0xFFFFFFFF - rng.integers(0, 1 << 24, size=lists.shape))
    f = np.arange(MPOOL_T // 2 * MPOOL_K)
    t, j = f // MPOOL_K, f % MPOOL_K
    a_live, b_live = t < N_TILES, t + MPOOL_T // 2 < N_TILES
    a = np.where(a_live, lists[np.minimum(t, N_TILES - 1), j], KEY_PAD)
    b = np.where(b_live, lists[np.minimum(t + MPOOL_T // 2, N_TILES - 1), MPOOL_K - 1 - j], KEY_PAD)
    flags = rng.integers(0, 8, size=N_TILES)
    fl = np.where(f < N_TILES, flags[np.minimum(f, N_TILES - 1)] ^ ((0x80 + epoch) << 23), 0)
    return (np.where(a_live, a ^ tag, 0), np.where(b_live, b ^ tag, 0), fl, np.maximum(a, b),
            int(flags.max()))  # fmt: skip


def _run_pool_untag(a: np.ndarray, b: np.ndarray, fl: np.ndarray, epoch: int) -> tuple[np.ndarray, int, int]:
    out = torch.zeros(MPOOL_T // 2 * MPOOL_K + 2, dtype=torch.int64, device=DEVICE)
    tags = ((0x80 + epoch) << 24, (0x80 + epoch) << 23)
    _pool_untag_kernel[(1,)](_t(a), _t(b), _t(fl, torch.int32), out, N_TILES, *tags,
                             MPOOL_T=MPOOL_T, MPOOL_K=MPOOL_K)  # fmt: skip
    got = out.cpu().numpy()
    return got[:-2], int(got[-2]), int(got[-1])


@pytest.mark.parametrize("epoch", [0, 57, EPOCHS - 1])
def test_pool_untag_flags_any_stale_word(epoch: int) -> None:
    """pool_untag: fresh words give the paired pool and the maximum flag word; one stale key (of
    either pair side) or one stale flag word (another epoch, untagged, zero) sets the stale bit."""
    rng = np.random.default_rng(epoch)
    a, b, fl, pool, fmax = _pool_words(epoch, rng)
    q, got_fmax, stale = _run_pool_untag(a, b, fl, epoch)
    assert stale == 0 and got_fmax == fmax and (q == pool).all()
    other = (epoch + 1) % EPOCHS
    for lane, side in [(0, "a"), (5, "a"), (3, "b"), (1, "fl"), (N_TILES - 1, "fl")]:
        for stale_word in ("other", "untagged", "zero"):
            words = {"a": a.copy(), "b": b.copy(), "fl": fl.copy()}
            w = words[side]
            if stale_word == "zero":
                w[lane] = 0
            elif side == "fl":
                w[lane] ^= ((0x80 + epoch) << 23) ^ ((0x80 + other) << 23 if stale_word == "other" else 0)
            else:
                w[lane] ^= ((0x80 + epoch) << 24) ^ ((0x80 + other) << 24 if stale_word == "other" else 0)
            _, got_fmax, stale = _run_pool_untag(words["a"], words["b"], words["fl"], epoch)
            assert stale == 1 and got_fmax >= 1 << 23, (lane, side, stale_word)


def test_polling_loop_reloads_and_gives_up() -> None:
    """_pool_validated: a stale first look over fresh memory takes one reload and gives the fresh pool;
    memory that stays stale makes it give up after SPIN_LIMIT reloads under the interpreter (on the
    GPU it waits), its result marked stale."""
    if not interpreting():
        pytest.skip("the give-up exists under the interpreter only (SPIN_LIMIT)")
    epoch = 9
    rng = np.random.default_rng(1)
    a, b, fl, pool, fmax = _pool_words(epoch, rng)
    # memory in the workspace layout: tile t's list at cand[t, :], its flag word at flags[t]
    lists = np.zeros((N_TILES, 32), dtype=np.int64)
    f = np.arange(MPOOL_T // 2 * MPOOL_K)
    t, j = f // MPOOL_K, f % MPOOL_K
    for lane in f:
        if t[lane] < N_TILES:
            lists[t[lane], j[lane]] = a[lane]
        if t[lane] + MPOOL_T // 2 < N_TILES:
            lists[t[lane] + MPOOL_T // 2, MPOOL_K - 1 - j[lane]] = b[lane]
    flags = fl[:N_TILES].astype(np.int32)
    out = torch.zeros(MPOOL_T // 2 * MPOOL_K + 2, dtype=torch.int64, device=DEVICE)
    tags = ((0x80 + epoch) << 24, (0x80 + epoch) << 23)
    stale_a = a.copy()
    stale_a[2] ^= 1 << 24  # the first look saw another epoch's key
    flags_t = torch.tensor(flags, dtype=torch.int32, device=DEVICE)
    _validated_kernel[(1,)](_t(lists), flags_t, _t(stale_a), _t(b), _t(fl, torch.int32), out, N_TILES, *tags,
                            MPOOL_T=MPOOL_T, MPOOL_K=MPOOL_K)  # fmt: skip
    got = out.cpu().numpy()
    assert (got[:-2] == pool).all() and got[-2] == fmax and got[-1] == 1
    lists[2, 0] ^= 1 << 24  # memory stays stale
    _validated_kernel[(1,)](_t(lists), flags_t, _t(stale_a), _t(b), _t(fl, torch.int32), out, N_TILES, *tags,
                            MPOOL_T=MPOOL_T, MPOOL_K=MPOOL_K)  # fmt: skip
    got = out.cpu().numpy()
    assert got[-1] == int(tags_jit.SPIN_LIMIT.value) and got[-2] >= 1 << 23


def test_hot_lists_reload_until_every_word_carries_the_tag() -> None:
    """_tagged_lists (the hot pairs' whole lists): fresh words untag at the first look; a live stale
    word (here written with the previous epoch's tag) makes it reload, and under the interpreter give
    up after SPIN_LIMIT reloads with that word still wrong; a stale word in a lane that is not live is
    ignored."""
    if not interpreting():
        pytest.skip("the give-up exists under the interpreter only (SPIN_LIMIT)")
    epoch, n = 40, int(MERGE_THREADS.value)  # (the hot lists have a lane per merge thread at least)
    rng = np.random.default_rng(2)
    keys = [_key(int(v), int(t)) for v, t in zip(rng.integers(-(1 << 31), 1 << 31, n),
                                                   rng.integers(0, 1 << 24, n), strict=True)]  # fmt: skip
    live = [int(i % 7 != 3) for i in range(n)]
    tag = (0x80 + epoch) << 24
    words = [_i64(k ^ tag) for k in keys]
    words[3] = 0  # (not live: never read as a key)
    out = torch.zeros(n + 1, dtype=torch.int64, device=DEVICE)
    _lists_kernel[(1,)](_t(words), _t(live), out, tag, N=n)
    got = out.cpu().numpy()
    want = [k if lv else KEY_PAD for k, lv in zip(keys, live, strict=True)]
    assert got[:n].tolist() == want and got[n] == 0
    words[5] = _i64(keys[5] ^ ((0x80 + epoch - 1) << 24))
    _lists_kernel[(1,)](_t(words), _t(live), out, tag, N=n)
    got = out.cpu().numpy()
    assert got[n] == int(tags_jit.SPIN_LIMIT.value) and got[5] != keys[5]
    assert [g for i, g in enumerate(got[:n].tolist()) if i != 5] == [w for i, w in enumerate(want) if i != 5]


@triton.jit
def _copies_kernel(out_ptr, P: tl.constexpr, N: tl.constexpr):
    xc, m = _copies(tl.arange(0, P), tl.arange(0, P) >= 0)
    tl.store(out_ptr + tl.arange(0, N), tl.reshape(tl.where(m, xc, -1), [N]))


@pytest.mark.parametrize("lanes", [16, 64, 128, 256, 512])
def test_polled_words_have_a_lane_per_merge_thread(lanes: int) -> None:
    """_copies (merge_jit): a polled vector of fewer lanes than the merge program's threads becomes
    MERGE_THREADS / lanes copies of every lane, so that no word is loaded by a thread whose copy the
    tag check does not count; a vector of a lane per thread or more stays as it is."""
    threads = int(MERGE_THREADS.value)
    n = max(lanes, threads)
    out = torch.full((n,), -2, dtype=torch.int64, device=DEVICE)
    _copies_kernel[(1,)](out, P=lanes, N=n)
    got = np.sort(out.cpu().numpy())
    assert (got == np.sort(np.tile(np.arange(lanes), n // lanes))).all()
