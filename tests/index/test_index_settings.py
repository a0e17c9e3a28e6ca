"""An index records the fingerprint and sketch settings it was built with
(`index/session.fingerprint_settings`) and refuses a run whose settings differ
(`_check_settings`), without Spark."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from simhash_udf.core.config import DedupeConfig, FingerprintConfig, SketchConfig
from simhash_udf.index.manifest import Manifest
from simhash_udf.index.session import _check_settings, fingerprint_settings
from simhash_udf.index.store import IndexError_


def test_an_index_from_before_the_segmenter_setting_is_refused_for_rjieba() -> None:
    """Manifests written before `segmenter` existed hold jieba's fingerprints: a run with
    the rjieba default is refused with the setting named, a run with --segmenter jieba goes on."""
    old_settings = fingerprint_settings(DedupeConfig())
    del old_settings["segmenter"]
    manifest = Manifest(version=1, k=3, blocks=6, fingerprint=old_settings, id_type="string")
    store = SimpleNamespace(root="/tmp/index")
    fast = DedupeConfig()
    with pytest.raises(IndexError_, match=r"segmenter: index 'jieba', run 'rjieba'"):
        _check_settings(store, manifest, fast, fingerprint_settings(fast))
    slow = DedupeConfig(fingerprint=FingerprintConfig(segmenter="jieba"))
    _check_settings(store, manifest, slow, fingerprint_settings(slow))
    # A new index records the setting, and a run with the same one is accepted.
    new = Manifest(version=1, k=3, blocks=6, fingerprint=fingerprint_settings(fast), id_type="string")
    assert new.fingerprint["segmenter"] == "rjieba"
    _check_settings(store, new, fast, fingerprint_settings(fast))


def test_sketch_settings_are_recorded_and_checked() -> None:
    """An index records its sketch settings; a run with another size, shingle, bands, rows or
    min_chars, or with --sketch none, is refused with the setting named; a new threshold or
    max distance is accepted; an index without sketch settings (older, or --sketch none)
    accepts any."""
    store = SimpleNamespace(root="/tmp/index")
    run = DedupeConfig()
    settings = fingerprint_settings(run)
    assert settings["sketch"] == {"size": 128, "shingle": 3, "bands": 25, "rows": 5, "min_chars": 300}
    index = Manifest(version=1, k=3, blocks=6, fingerprint=settings, id_type="string")
    for change, named in (
        ({"size": 64, "bands": 12}, "sketch bands: index 25, run 12, sketch size: index 128, run 64"),
        ({"shingle": 2}, "sketch shingle: index 3, run 2"),
        ({"rows": 4}, "sketch rows: index 5, run 4"),
        ({"min_chars": 200}, "sketch min_chars: index 300, run 200"),
    ):
        other = DedupeConfig(sketch=SketchConfig(**change))
        with pytest.raises(IndexError_, match=re.escape(named)):
            _check_settings(store, index, other, fingerprint_settings(other))
    off = DedupeConfig(sketch=SketchConfig(jaccard=None))
    assert fingerprint_settings(off)["sketch"] is None
    with pytest.raises(IndexError_, match="stores MinHash sketches"):
        _check_settings(store, index, off, fingerprint_settings(off))
    looser = DedupeConfig(sketch=SketchConfig(jaccard=0.6, max_distance=20))
    _check_settings(store, index, looser, fingerprint_settings(looser))
    older = {k: v for k, v in settings.items() if k != "sketch"}
    for manifest_settings in (older, {**older, "sketch": None}):
        manifest = Manifest(version=1, k=3, blocks=6, fingerprint=manifest_settings, id_type="string")
        _check_settings(store, manifest, run, settings)
        _check_settings(store, manifest, off, fingerprint_settings(off))
