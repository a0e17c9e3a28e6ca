"""The few near-duplicate pairs report.html shows, with the start of their texts.

`sample_pairs` collects them from the run's frames (the pairs furthest apart; only these few
rows reach the driver); `report/html_page.render` draws them.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from simhash_udf.report.html_page import PairSample

# How many pairs the page shows, and how much of each text: the page must stay small
# whatever the crawl.
SAMPLE_PAIRS = 5
SAMPLE_CHARS = 3000


def sample_pairs(
    pairs: DataFrame,
    docs: DataFrame,
    id_col: str,
    text_col: str | None,
    limit: int = SAMPLE_PAIRS,
    max_chars: int = SAMPLE_CHARS,
    extract: str | None = None,
) -> list[PairSample]:
    """The `limit` pairs furthest apart (ties by id_a, id_b: deterministic), with the start of
    their texts; only these few rows reach the driver.

    pairs: `id_a`, `id_b`, `distance`, [`jaccard`] (see `NearDuplicates.pairs`).
    docs: the input documents, with `id_col` and (unless `text_col` is None) `text_col`.
    extract: for HTML input, the `--extract` mode: the page is shown as the text that was
        fingerprinted (`extract.extract_text`, on the driver for these few pages) rather
        than as raw HTML.
    """
    top = pairs.orderBy(F.col("distance").desc(), "id_a", "id_b").limit(limit).collect()
    if not top:
        return []
    texts: dict[Any, tuple[str | None, bool]] = {}
    if text_col is not None:
        wanted = {r["id_a"] for r in top} | {r["id_b"] for r in top}
        text = F.col(text_col).cast("string")
        # HTML is extracted whole (the article may start after max_chars of markup).
        shown = text if extract else F.substring(text, 1, max_chars)
        rows = (
            docs.where(F.col(id_col).isin(list(wanted)))
            .select(
                F.col(id_col).alias("id"),
                shown.alias("text"),
                (F.length(text) > max_chars).alias("truncated"),
            )
            .collect()
        )
        texts = {r["id"]: (r["text"], bool(r["truncated"])) for r in rows}
        if extract:
            from simhash_udf.core.extract import extract_text

            for key, (raw, _) in texts.items():
                plain = extract_text(raw, extract) if raw is not None else None
                cut = plain is not None and len(plain) > max_chars
                texts[key] = (plain[:max_chars] if plain is not None else None, cut)
    samples = []
    for r in top:
        text_a, cut_a = texts.get(r["id_a"], (None, False))
        text_b, cut_b = texts.get(r["id_b"], (None, False))
        jaccard = r["jaccard"] if "jaccard" in r else None
        samples.append(PairSample(r["id_a"], r["id_b"], int(r["distance"]), text_a, text_b, cut_a, cut_b, jaccard))
    return samples
