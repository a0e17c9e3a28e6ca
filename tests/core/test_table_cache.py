"""The table cache (`core/table_cache.py`) and the regional triggers kept in it: a stored table
is the one derivation gives, is read instead of derived, and is never read stale or damaged."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simhash_udf.core import normalise
from simhash_udf.core.table_cache import CACHE_DIR_VARIABLE, cache_dir, cached_arrays, cached_json, table_key


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(folder))
    return folder


def test_a_table_is_derived_once_then_read(cache: Path) -> None:
    calls = []

    def derive() -> dict:
        calls.append(1)
        return {"words": ["软件", "信号"], "pair": ("a", "b")}

    first = cached_json("demo", "k1", derive)
    second = cached_json("demo", "k1", derive)
    assert calls == [1]
    # The same value whether derived or read (JSON's: the tuple is a list both times).
    assert first == second == {"words": ["软件", "信号"], "pair": ["a", "b"]}
    assert [p.name for p in cache.iterdir()] == ["demo-k1.json"]


def test_another_key_derives_again(cache: Path) -> None:
    assert cached_json("demo", "k1", lambda: [1]) == [1]
    assert cached_json("demo", "k2", lambda: [2]) == [2]
    assert cached_json("demo", "k1", lambda: [3]) == [1]


def test_the_key_follows_the_bytes_of_every_source_and_each_version(tmp_path: Path) -> None:
    source = tmp_path / "source.txt"
    source.write_text("one")
    before = table_key("demo", [source], ["opencc 1.4.2"])
    assert table_key("demo", [source], ["opencc 1.4.2"]) == before
    assert table_key("demo", [source], ["opencc 1.4.3"]) != before
    assert table_key("other", [source], ["opencc 1.4.2"]) != before
    # The same files elsewhere (an environment unpacked in another container): the same key.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "source.txt").write_text("one")
    assert table_key("demo", [elsewhere / "source.txt"], ["opencc 1.4.2"]) == before
    source.write_text("two")
    assert table_key("demo", [source], ["opencc 1.4.2"]) != before


def test_a_damaged_table_is_derived_again_and_replaced(cache: Path) -> None:
    cache.mkdir()
    (cache / "demo-k1.json").write_text('{"words": ["软', encoding="utf-8")  # cut short
    assert cached_json("demo", "k1", lambda: {"words": ["软件"]}) == {"words": ["软件"]}
    assert json.loads((cache / "demo-k1.json").read_text(encoding="utf-8")) == {"words": ["软件"]}


def test_a_folder_that_cannot_be_written_only_costs_the_derivation(cache: Path) -> None:
    cache.write_text("a file where the folder should be")
    assert cached_json("demo", "k1", lambda: [1, 2]) == [1, 2]
    assert cache.read_text() == "a file where the folder should be"


def test_the_default_folder_is_the_users_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(CACHE_DIR_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "simhash_udf"


def test_stored_regional_triggers_are_the_derived_ones_and_are_read_back(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    derived = normalise.derive_trigger_strings()  # independently of the cache
    normalise.regional_triggers.cache_clear()
    try:
        normalise.regional_triggers()
        (stored,) = cache.glob("regional-triggers-*.json")
        assert json.loads(stored.read_text(encoding="utf-8")) == {
            "marked": derived.marked, "raw": derived.raw, "clause_end": derived.clause_end,
        }
        assert len(derived.marked) > 1000 and derived.raw  # a real derivation, not an empty table

        # A new process (the per-process cache cleared) reads the table and derives nothing.
        def refuse() -> None:
            raise AssertionError("derived again although the table is stored")

        monkeypatch.setattr(normalise, "derive_trigger_strings", refuse)
        normalise.regional_triggers.cache_clear()
        triggers = normalise.regional_triggers()
        # ... and the triggers it builds mark what the derived ones mark.
        text = "軟件和電視信號,视讯。軟"
        assert triggers.marking.convert(text) == derived.triggers().marking.convert(text)
        # The fast path over the read triggers ends where the whole chain does (软体 -> 软件).
        for sentence in ("我们的软体与电视信号。", "軟體工程師建立了程序,衞生。"):
            assert normalise.to_canonical_chinese(sentence) == normalise.to_canonical_chinese(
                sentence, normalise.REGIONAL_CHAIN, fast=False
            )
        assert "软件" in normalise.to_canonical_chinese("我们的软体。")
    finally:
        normalise.regional_triggers.cache_clear()


def test_arrays_are_derived_once_then_read_with_their_types(cache: Path) -> None:
    calls = []

    def derive() -> dict:
        calls.append(1)
        return {"hashes": np.array([3, 1 << 63], dtype=np.uint64), "values": np.array([0.5, 2.25])}

    first = cached_arrays("demo", "k1", derive)
    second = cached_arrays("demo", "k1", derive)
    assert calls == [1]
    for table in (first, second):
        assert table["hashes"].dtype == np.uint64 and table["hashes"].tolist() == [3, 1 << 63]
        assert table["values"].tolist() == [0.5, 2.25]
    assert [p.name for p in cache.iterdir()] == ["demo-k1.npz"]


def test_damaged_arrays_are_derived_again_and_replaced(cache: Path) -> None:
    cache.mkdir()
    (cache / "demo-k1.npz").write_bytes(b"PK\x03\x04 cut short")
    table = cached_arrays("demo", "k1", lambda: {"values": np.arange(3)})
    assert table["values"].tolist() == [0, 1, 2]
    assert cached_arrays("demo", "k1", lambda: {"values": np.arange(5)})["values"].tolist() == [0, 1, 2]


def test_arrays_holding_objects_are_never_unpickled(cache: Path) -> None:
    """A shared folder's file must not run code when read: an object array is refused, and
    the table derived instead."""
    cache.mkdir()
    np.savez(cache / "demo-k1.npz", values=np.array([{"a": 1}], dtype=object))
    assert cached_arrays("demo", "k1", lambda: {"values": np.arange(2)})["values"].tolist() == [0, 1]


def test_stored_tables_are_readable_by_every_user_of_a_shared_folder(cache: Path) -> None:
    """A cluster's executors may run as another user than the driver that filled the folder:
    each would derive its tables again (and replace the others') if the files were the
    owner's alone, as mkstemp makes them. Nothing in a table is private."""
    cached_json("shared", "k1", lambda: {"a": 1})
    cached_arrays("shared", "k2", lambda: {"a": np.arange(3)})
    for stored in cache.iterdir():
        assert stored.stat().st_mode & 0o777 == 0o644, stored.name
