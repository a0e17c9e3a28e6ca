"""An index records the fingerprint settings it was built with
(`index/session.fingerprint_settings`) and refuses a run whose settings differ
(`_check_settings`), without Spark."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from simhash_udf.core.config import DedupeConfig, FingerprintConfig
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
