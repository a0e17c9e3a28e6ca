"""bench/regional.py: the regional copies frame on hand-written Simplified and Traditional texts."""

from __future__ import annotations

from bench.pair_sets import DistinctTexts
from bench.regional import is_traditional, regional_frame
from simhash_udf.core.normalise import converter, normalise

SIMPLIFIED = "我们的软件通过网络下载文件，然后用打印机打印出来。这个程序的信息很多。"
TRADITIONAL = "我們的軟體透過網路下載檔案，然後用印表機列印出來。這個程式的資訊很多。"


def test_script_detection() -> None:
    assert not is_traditional(SIMPLIFIED)
    assert is_traditional(TRADITIONAL)
    assert not is_traditional("plain English text")


def test_frame_pairs_each_text_with_the_reprints_its_script_calls_for() -> None:
    corpus = DistinctTexts()
    sources = [("hand", "simplified", SIMPLIFIED), ("hand", "traditional", TRADITIONAL)]
    frame = regional_frame(corpus, sources, seed=0)
    by_name = frame.groupby("name")["variant"].apply(list).to_dict()
    assert by_name == {
        "simplified": ["s2twp", "s2tw", "s2hk", "s2hkp", "tw2sp", "hk2s", "t2s"],
        "traditional": ["tw2sp", "hk2s", "t2s"],
    }
    taiwan = converter("s2twp").convert(SIMPLIFIED)
    expected = {
        ("simplified", "s2twp"): (SIMPLIFIED, taiwan),
        ("simplified", "s2hk"): (SIMPLIFIED, converter("s2hk").convert(SIMPLIFIED)),
        ("simplified", "tw2sp"): (taiwan, converter("tw2sp").convert(taiwan)),  # the Taiwan reprint, back
        ("traditional", "t2s"): (TRADITIONAL, converter("t2s").convert(TRADITIONAL)),
    }
    for (name, variant), (original, reprint) in expected.items():
        row = frame[(frame["name"] == name) & (frame["variant"] == variant)].iloc[0]
        assert corpus.texts[row["a"]] == normalise(original)
        assert corpus.texts[row["b"]] == normalise(reprint)
    assert (frame["exact"] == (frame["a"] == frame["b"])).all()
    assert list(frame.columns) == ["origin", "name", "variant", "a", "b", "exact"]
