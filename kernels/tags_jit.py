# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""The tagged words through which the merge polls the tile programs (clause 2.4 across launches).

The merge is launched as a programmatic dependent of the tile kernel: its programs may start while
the tile programs run, and instead of waiting for the tile grid's end it polls the words they store
(benchmarks/DESIGN.md "Two launches and the polling merge"). Whether a word was stored by this launch
is told by a tag, never by memory ordering:

- the workspace holds one counter word per row, epoch << EPOCH_SHIFT, epochs cycling over EPOCHS
  values; the tile programs read it at their start, and the row's merge program stores the next epoch
  once it has accepted every word of the launch (so every tile program has read the current one);
- a tile program XORs the tag T = TAG_BASE + epoch, in [0x80, 0xFE], into bits 24-31 of every key it
  stores (the ID word's top byte: IDs are below 2^24 where tags apply) and into bits 23-30 of its flag
  word (three flag bits below);
- the merge XORs T out again and accepts a word only if the result is one a tile program of this
  launch can have stored (untag_keys; merge_jit.pool_untag for the flags), reloading until all are.

A word is accepted exactly when it was written in this launch: the previous writer of a slot used
another tag, no tag (a plan whose tags do not apply) or the workspace's zero fill, and none of those
untags to a valid word (untag_keys' docstring). Aligned 64- and 32-bit stores are single-copy atomic,
so a word is never seen half written.
"""

from dyadic24.kernels.backend import interpreting, select_backend

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from dyadic24.kernels.ieee_jit import KEY_PAD  # noqa: E402

EPOCH_SHIFT = tl.constexpr(24)  # counter word: epoch << 24
EPOCHS = tl.constexpr(127)  # epochs 0..126, so that the tag 0x80 + epoch stays below 0xFF
TAG_BASE = tl.constexpr(0x80)  # epoch E tags with T = 0x80 + E
KEY_TAG_SHIFT = tl.constexpr(24)  # T is XORed into bits 24-31 of each stored key (its ID word)
FLAG_TAG_SHIFT = tl.constexpr(23)  # and into bits 23-30 of each flag word
FLAG_TAG_LIMIT = tl.constexpr(1 << 23)  # an untagged flag word of this launch is below this
# Reloads a polling loop takes before it gives up, under the interpreter only: it runs programs one
# after another, so the first look always finds every word there, and a bug that leaves words stale
# fails a test (stale keys name other IDs) instead of hanging it. 0 on the GPU: unbounded, no code.
SPIN_LIMIT = tl.constexpr(8 if interpreting() else 0)


@triton.jit
def row_tags(counter_ptr, row, TAGGED: tl.constexpr):
    """The row's counter word and the key and flag tags of its epoch (zeros when not TAGGED: words are
    stored and read untagged)."""
    word = 0
    ktag = 0
    ftag = 0
    if TAGGED:
        word = tl.load(counter_ptr + row, cache_modifier=".cg")
        tag = TAG_BASE + (word >> EPOCH_SHIFT)
        ktag = tag.to(tl.int64) << KEY_TAG_SHIFT
        ftag = tag << FLAG_TAG_SHIFT
    return word, ktag, ftag


@triton.jit
def next_epoch(word):
    """The counter word that opens the row's next launch: its epoch advanced (wrapping after EPOCHS)."""
    epoch = word >> EPOCH_SHIFT
    return tl.where(epoch >= EPOCHS - 1, 0, epoch + 1) << EPOCH_SHIFT


@triton.jit
def untag_keys(x, live, ktag):
    """Keys stored with the tag ktag (T << 24), untagged (KEY_PAD where not ``live``), and 1 where a
    live word does not carry T. After the XOR a word written with T has bits 24-31 0xFF (a real key:
    its ID word is 2^32 - 1 - ID, ID < 2^24) or 0x00 (KEY_PAD); one written with another tag T' in
    [0x80, 0xFE] has 0xFF ^ T ^ T' or T ^ T' there, with T ^ T' in [1, 0x7E]; one written untagged
    or zero-filled has T ^ 0xFF in [1, 0x7F] or T in [0x80, 0xFE]: none of them is 0x00 or 0xFF."""
    k = x ^ ktag
    top = (k >> KEY_TAG_SHIFT) & 0xFF
    stale = live & (top != 0) & (top != 0xFF)
    return tl.where(live, k, KEY_PAD), stale.to(tl.int32)
