"""The short-text policy in plain Python (`simhash_udf.core.short_text_policy`): shingles,
Jaccard similarity, the --verify value and which pairs the rule checks, against written-out
oracles (no Spark)."""

from __future__ import annotations

import random

import pytest
from generators import VOCAB, brute_jaccard, brute_word_shingles

from simhash_udf.core.config import ConfigError, VerifyConfig
from simhash_udf.core.short_text_policy import (
    carried_below,
    fingerprint_checked,
    is_checked,
    jaccard,
    keeps,
    pair_verdict,
    parse_spec,
    shingles,
)


def test_word_shingles_by_hand():
    assert shingles("The quick, brown  FOX!", 2) == {"the quick", "quick brown", "brown fox"}
    assert shingles("The quick, brown  FOX!", 1) == {"the", "quick", "brown", "fox"}
    assert shingles("one two", 3) == {"one two"}  # shorter than n: the whole text, once
    assert shingles("", 2) == set() and shingles(" ,;! ", 2) == set()


def test_han_text_is_shingled_by_characters_after_normalising():
    # Traditional and full-width forms fold (normalise); punctuation is not a character shingle.
    expected = {"今天", "天天", "天气", "气很", "很好"}
    assert shingles("今天天气很好", 2) == expected
    assert shingles("今天天氣很好！", 2) == expected
    assert shingles("今天 天气，很好", 2) == expected
    # One Han character makes the whole text character-shingled (Latin letters included).
    assert shingles("用vista", 3) == {"用vi", "vis", "ist", "sta"}


def test_shingles_of_already_normalised_text_skip_normalising():
    assert shingles("ABC def", 1, normalised=True) == {"ABC", "def"}
    with pytest.raises(ValueError):
        shingles("a b", 0)


def test_shingles_and_jaccard_against_brute_force():
    rng = random.Random(11)
    for _ in range(300):
        n = rng.randint(1, 4)
        a = " ".join(rng.choice(VOCAB[:6]) for _ in range(rng.randint(0, 12)))
        b = " ".join(rng.choice(VOCAB[:6]) for _ in range(rng.randint(0, 12)))
        sa, sb = shingles(a, n), shingles(b, n)
        assert sa == brute_word_shingles(a, n) and sb == brute_word_shingles(b, n)
        assert jaccard(sa, sb) == pytest.approx(brute_jaccard(sa, sb))
        assert jaccard(sa, sb) == jaccard(sb, sa)


def test_jaccard_edges():
    assert jaccard(set(), set()) == 1.0
    assert jaccard({"a"}, set()) == 0.0
    assert jaccard({"a", "b"}, {"a", "b"}) == 1.0
    assert jaccard({"a", "b", "c"}, {"b", "c", "d"}) == pytest.approx(0.5)


def test_parse_spec():
    assert parse_spec("jaccard:0.8") == 0.8 and parse_spec("JACCARD:1") == 1.0
    assert parse_spec("none") is None and parse_spec("off") is None
    for bad in ("jaccard", "jaccard:", "jaccard:0", "jaccard:1.5", "jaccard:x", "minhash:0.5", ""):
        with pytest.raises(ConfigError):
            parse_spec(bad)


def test_rule_checks_only_short_pairs():
    policy = VerifyConfig(threshold=0.5, below_chars=20, shingle=2)
    assert is_checked(19, 500, policy) and not is_checked(20, 20, policy)
    assert is_checked(10_000, 10_000, VerifyConfig(threshold=0.5, below_chars=None))
    assert not is_checked(1, 1, VerifyConfig(threshold=None))
    long_a, long_b = "river " * 10, "stone " * 10  # unrelated but long: not checked, kept
    assert keeps(long_a.strip(), long_b.strip(), policy)
    assert not keeps("river stone", "stone river", policy)
    assert keeps("river stone garden window", "river stone", policy) is False  # 1/3 bigrams
    assert keeps("river stone garden", "river stone", policy)  # 1/2 bigrams: at the threshold
    assert keeps("river stone garden window", "river stone garden", VerifyConfig(0.5, 100, 2))


def test_pair_verdict_of_fingerprints_with_several_texts_against_written_out_cases():
    """A pair of fingerprints is judged over every pair of their texts: checked if any text pair
    is, its largest checked similarity, kept if any text pair is unchecked or passes."""
    policy = VerifyConfig(threshold=0.5, below_chars=20, shingle=2)
    assert pair_verdict(["river stone"], ["stone river"], policy) == (True, 0.0, False)
    # 1/2 bigrams reach the threshold; 1/3 does not: one passing text pair keeps the pair.
    assert pair_verdict(["river stone garden window", "river stone garden"], ["river stone"], policy) == (
        True, 0.5, True)
    # Both texts long: no text pair is checked, the pair is kept.
    long_a, long_b = ("river " * 10).strip(), ("stone " * 10).strip()
    assert pair_verdict([long_a], [long_b], policy) == (False, None, True)
    # One text pair unchecked keeps the pair whatever the checked one says.
    assert pair_verdict(["river stone", long_a], [long_b], policy) == (True, 0.0, True)
    assert pair_verdict([], ["river"], policy) is None and pair_verdict(["river"], [], policy) is None


def test_pair_verdict_of_one_text_each_is_keeps():
    """With one text a side, the verdict's `kept` is `keeps`, for random texts and policies."""
    rng = random.Random(5)
    for _ in range(300):
        policy = VerifyConfig(
            threshold=rng.choice([0.3, 0.5, 0.8]), below_chars=rng.choice([None, 15, 40]), shingle=rng.randint(1, 3)
        )
        a = " ".join(rng.choice(VOCAB[:6]) for _ in range(rng.randint(1, 12)))
        b = " ".join(rng.choice(VOCAB[:6]) for _ in range(rng.randint(1, 12)))
        checked, value, kept = pair_verdict([a], [b], policy)
        assert kept == keeps(a, b, policy)
        assert checked == is_checked(len(a), len(b), policy)
        assert value == (pytest.approx(brute_jaccard(brute_word_shingles(a, policy.shingle),
                                                     brute_word_shingles(b, policy.shingle))) if checked else None)


def test_a_fingerprint_is_checked_unless_its_texts_are_all_long_enough():
    policy = VerifyConfig(threshold=0.5, below_chars=20)
    assert fingerprint_checked(19, policy) and not fingerprint_checked(20, policy)
    assert fingerprint_checked(None, policy)  # no known text: checked, listing is always safe
    assert fingerprint_checked(10_000, VerifyConfig(threshold=0.5, below_chars=None))
    assert not fingerprint_checked(1, VerifyConfig(threshold=None))
    # A pair is checked exactly when one of its fingerprints is, for one text each.
    for a in (5, 19, 20, 40):
        for b in (5, 19, 20, 40):
            assert is_checked(a, b, policy) == (fingerprint_checked(a, policy) or fingerprint_checked(b, policy))


def test_carried_texts_reach_the_longest_partner_a_short_text_can_keep():
    """Texts under L are carried, and their partners up to L / T characters (at most 2L); none
    with the check off or checking every pair."""
    assert carried_below(VerifyConfig(threshold=0.65, below_chars=300)) == 462  # ceil(461.5)
    assert carried_below(VerifyConfig(threshold=1.0, below_chars=300)) == 300
    assert carried_below(VerifyConfig(threshold=0.1, below_chars=300)) == 600  # capped at 2L
    assert carried_below(VerifyConfig(threshold=None, below_chars=300)) is None  # the check is off
    assert carried_below(VerifyConfig(threshold=0.5, below_chars=None)) is None  # would carry every text


def test_a_short_text_keeps_no_uncarried_partner_whose_shingles_are_distinct():
    """The limit's reason, brute force: a text under L and a text at or over the carried
    limit, every shingle of each distinct (Han characters, each used once), never reach the
    threshold, so (short of the 2L cap) only a partner repeating its shingles could make a
    pair the check keeps that was not carried."""
    rng = random.Random(7)
    alphabet = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
    for _ in range(300):
        below, threshold = rng.randint(5, 120), rng.choice([0.5, 0.6, 0.65, 0.8, 0.9, 1.0])
        policy = VerifyConfig(threshold=threshold, below_chars=below, shingle=rng.choice([1, 2, 3]))
        limit = carried_below(policy)
        assert limit is not None and below <= limit <= 2 * below
        chars = rng.sample(alphabet, 2 * limit + 5)
        short = "".join(chars[: rng.randint(policy.shingle, below - 1)])
        # The partner shares as much of the short text as it can: all of it, then new characters.
        start = rng.randint(0, len(short))
        long = short[start:] + "".join(chars[len(short):][: rng.randint(limit, 2 * limit) - (len(short) - start)])
        assert len(long) >= limit
        if limit < 2 * below:  # not capped: the bound L / T holds
            assert not keeps(short, long, policy), (policy, len(short), len(long))
