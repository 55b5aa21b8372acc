"""The golden-vector reader (clause 13.1): API shapes, hashes, file selection."""

from __future__ import annotations

import gzip
import hashlib

import numpy as np
import pytest

from dyadic24.api import K_MAX
from dyadic24.vectors import store


def test_spec_sha256_is_the_spec_file_hash() -> None:
    assert store.spec_sha256() == hashlib.sha256(store.spec_path().read_bytes()).hexdigest()


def test_vector_set_sha256_follows_the_documented_recipe() -> None:
    """README: sha256sum-style lines over the JSON text of the golden files and accumulated.json."""
    files = sorted(
        [*store.DATA_DIR.glob("golden_*"), store.DATA_DIR / "accumulated.json"], key=lambda p: p.name.encode()
    )
    lines = ""
    for p in files:
        raw = p.read_bytes()
        text = gzip.decompress(raw) if p.name.endswith(".gz") else raw
        lines += f"{hashlib.sha256(text).hexdigest()}  {p.name}\n"
    assert store.vector_set_sha256() == hashlib.sha256(lines.encode()).hexdigest()


def test_golden_vector_fields() -> None:
    """Clause 12.1 shapes and dtypes of a vector read from the files."""
    for v in store.iter_vectors(["status", "golden_order.json"]):
        b = v.batch
        assert v.logits.dtype == np.float32 and v.logits.shape == (b, v.vocab)
        assert v.temperature.dtype == np.float32 and v.temperature.shape == (b,)
        for a in (v.seed, v.round, v.position):
            assert a.dtype == np.uint64 and a.shape == (b,)
        assert v.expected.ids.shape == (b, K_MAX) and v.expected.tickets.shape == (b, K_MAX)
        assert v.expected.status.dtype == np.int32 and len(v.expected_trace) == b
        assert v.file in ("golden_status.json", "golden_order.json")


def test_selection_by_topic_stem_and_name() -> None:
    a = [v.tc_id for v in store.iter_vectors(["tree"])]
    b = [v.tc_id for v in store.iter_vectors(["golden_tree"])]
    c = [v.tc_id for v in store.iter_vectors(["golden_tree.json"])]
    assert a == b == c == list(range(1, len(a) + 1))
    with pytest.raises(KeyError):
        list(store.iter_vectors(["no-such-file"]))


def test_flag_notes_cover_every_flag() -> None:
    flags = {f for v in store.iter_vectors() for f in v.flags}
    notes = store.flag_notes()
    assert flags <= set(notes)
    assert all(len(notes[f]["text"]) > 20 and notes[f]["clauses"] for f in flags)


def test_narrow_logits_widen_to_the_logits() -> None:
    """Clause 1.2: the 16-bit form widens exactly to the binary32 logits."""
    from dyadic24.api import widen_bfloat16

    seen = set()
    for v in store.iter_vectors(["widening"]):
        assert v.narrow_format is not None and v.narrow_logits is not None
        seen.add(v.narrow_format)
        if v.narrow_format == "bfloat16":
            wide = widen_bfloat16(v.narrow_logits)
        else:
            wide = v.narrow_logits.view(np.float16).astype(np.float32)
        assert np.array_equal(wide.view(np.uint32), v.logits.view(np.uint32))
    assert seen == {"binary16", "bfloat16"}
