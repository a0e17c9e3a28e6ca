"""Benchmark: fingerprint throughput, MB of text per second per core, ours against baselines.

    .venv/bin/python -m bench.fingerprint_throughput [--quick] [--repeats 3] [--no-spark]

Prints a JSON document (for bench/run_all.py, which writes bench/RESULTS.md). Corpora: see
bench/corpora.py. MB = 10^6 bytes of UTF-8.

Single process (one core), over the same documents, methods interleaved in every repeat:
- ours: what the job's two pandas UDFs do to a document, `normalise.normalise` then
  `fingerprint.fingerprints` with the default `FingerprintConfig` (jieba's segmentation by
  rjieba on Han runs, words elsewhere, logtfidf weights, xxh3 feature hashes);
- ours, --segmenter jieba: the same with the Python jieba as the segmenter (Chinese only:
  English text has no Han runs, so it never reaches a segmenter);
- recipe: baseline (a), the blog post's recipe (bench/recipe.py);
- simhash-pkg: baseline (b), the `simhash` package from PyPI, given the text as it expects it
  (`Simhash(text)`: its own tokens, lower-cased character 4-grams of word characters, md5;
  with a one-line fix for numpy 2, see `_simhash_class`);
- simhash-pkg on our tokens: the same package given the library's tokens and their counts
  (`Simhash({token: count})`), which isolates its hashing from its tokenisation;
- jieba / rjieba: segmentation alone (precise mode, HMM on), Chinese only;
- ours' stages, cumulative: normalise; normalise + tokens (the rest of `ours` is numbering,
  counting, weights and hashing), to show where its time goes.
English text methods run on the text the library extracts from the HTML (`html_text.html_to_text`,
timed apart as its own line, in MB of HTML); their MB are MB of that text.

Spark (local[2], Arrow batches as in the job): the fingerprint stage over a binary column of the
raw documents (Chinese text; English HTML), forced with the `noop` writer: ours =
`udfs.normalised_text` (with `--extract all`: `html_to_text`, as the recipe) then `udfs.simhash`
(for English this includes HTML extraction), recipe =
a pandas UDF that decodes, extracts the HTML text for English (the same `html_to_text`, so the
comparison is of fingerprinting) and runs the recipe. MB/s per core = input MB / s / 2.

Token equality: jieba's and rjieba's tokens of every Chinese document (normalised text): the
whole document, and the job's path (`text.mixed_tokens` with each segmenter).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable

import pandas as pd  # module level: pandas_udf resolves the type hints here

from bench.corpora import Corpus, CorpusError, peoples_daily, python_doc_html
from bench.machine import load_average
from bench.recipe import recipe_simhashes
from bench.runners import ROOT, bench_session, interleaved
from simhash_udf.core.config import FingerprintConfig
from simhash_udf.core.fingerprint import fingerprints
from simhash_udf.core.html_text import html_to_text
from simhash_udf.core.normalise import normalise
from simhash_udf.core.tokens import _jieba_tokenizer, mixed_tokens, tokens

CONFIG = FingerprintConfig()
JIEBA_CONFIG = FingerprintConfig(segmenter="jieba")
SPARK_CORES = 2


def _mb(texts: list[str]) -> float:
    return sum(len(t.encode("utf-8")) for t in texts) / 1e6


def ours(texts: list[str]) -> object:
    return fingerprints([normalise(t) for t in texts], CONFIG)


def ours_jieba(texts: list[str]) -> object:
    """ours with the Python jieba as the segmenter (the engine before rjieba)."""
    return fingerprints([normalise(t) for t in texts], JIEBA_CONFIG)


def ours_normalise(texts: list[str]) -> object:
    """Stage breakdown of `ours`: normalisation alone."""
    return [normalise(t) for t in texts]


def ours_tokens(texts: list[str]) -> object:
    """Stage breakdown of `ours`: normalisation and tokens (no weights, no hashing)."""
    # As `fingerprints` asks for them: with n-grams of 1, out of text order (one segmenter
    # call per document).
    return [tokens(normalise(t), CONFIG.tokenizer, CONFIG.segmenter, ordered=CONFIG.ngram > 1) for t in texts]


def _simhash_class() -> type:
    """`simhash.Simhash` with one fix: its per-feature bit array widened from uint8.

    simhash 2.1.2 multiplies a uint8 bit array by a feature's weight when the weight exceeds
    its `large_weight_cutoff` (50), which overflows under numpy 2 (a 4-gram seen 51 times in a
    page raises OverflowError). Widening the array changes no fingerprint, only makes it run.
    """
    import numpy as np
    from simhash import Simhash

    class WideSimhash(Simhash):
        @staticmethod
        def _bitarray_from_bytes(b: bytes) -> np.ndarray:
            return np.unpackbits(np.frombuffer(b, dtype=">B")).astype(np.int64)

    return WideSimhash


def simhash_pkg(texts: list[str]) -> object:
    cls = _simhash_class()
    return [cls(t).value for t in texts]


def simhash_pkg_our_tokens(texts: list[str]) -> object:
    cls = _simhash_class()
    return [cls(dict(Counter(tokens(normalise(t), CONFIG.tokenizer, CONFIG.segmenter)))).value for t in texts]


def jieba_cut(texts: list[str]) -> object:
    tokenizer = _jieba_tokenizer()
    return [list(tokenizer.cut(t, HMM=True)) for t in texts]


def rjieba_cut(texts: list[str]) -> object:
    import rjieba

    return [rjieba.cut(t, hmm=True) for t in texts]


def time_methods(
    texts: list[str], methods: dict[str, Callable[[list[str]], object]], repeats: int
) -> dict[str, dict]:
    """Wall and CPU seconds of each method over all texts, `repeats` times, interleaved."""
    for fn in methods.values():  # load dictionaries and tables outside the timings
        fn(texts[:2])
    runs = interleaved({name: (lambda fn=fn: fn(texts)) for name, fn in methods.items()}, repeats)
    mb = _mb(texts)
    out = {}
    for name, r in runs.items():
        wall = statistics.median(r.wall_s)
        cpu = statistics.median(r.cpu_s)
        out[name] = {
            "mb": mb,
            "wall_s": [round(w, 3) for w in r.wall_s],
            "cpu_s": [round(c, 3) for c in r.cpu_s],
            "mb_per_s": mb / wall,
            "mb_per_cpu_s": mb / cpu if cpu else None,
        }
    return out


def token_equality(texts: list[str], han_runs_only: bool = False) -> dict:
    """How often jieba and rjieba cut a normalised document into the same tokens.

    han_runs_only: the job's path, `text.mixed_tokens` with each segmenter (each run of Han
    characters in jieba's range to the segmenter, words and other Han characters apart),
    instead of the whole document handed to each engine.
    """
    import rjieba

    tokenizer = _jieba_tokenizer()
    identical = 0
    examples: list[dict] = []
    total_jieba = total_rjieba = differing_tokens = 0
    for text in texts:
        text = normalise(text)
        if han_runs_only:
            a, b = mixed_tokens(text, "jieba"), mixed_tokens(text, "rjieba")
        else:
            a, b = list(tokenizer.cut(text, HMM=True)), rjieba.cut(text, hmm=True)
        total_jieba += len(a)
        total_rjieba += len(b)
        if a == b:
            identical += 1
        else:
            ca, cb = Counter(a), Counter(b)
            differing_tokens += sum(((ca - cb) + (cb - ca)).values())
            if len(examples) < 5:
                # Where the two first part ways: a few tokens of each from there.
                first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                examples.append({"jieba": a[first : first + 4], "rjieba": b[first : first + 4]})
    return {
        "documents": len(texts),
        "identical": identical,
        "tokens_jieba": total_jieba,
        "tokens_rjieba": total_rjieba,
        "token_multiset_difference": differing_tokens,
        "examples": examples,
    }


def spark_stage(corpora: list[Corpus], repeats: int, memory: str) -> dict:
    """MB/s per core of the fingerprint stage on local[2], ours and the recipe as pandas UDFs."""
    from pyspark.sql import functions as F
    from pyspark.sql.functions import pandas_udf
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    from simhash_udf.stages import udfs

    spark = bench_session("bench-fingerprint", memory, master=f"local[{SPARK_CORES}]",
                          conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "8"})
    # The recipe UDF imports bench/recipe.py as `recipe` on the workers.
    spark.sparkContext.addPyFile(str(ROOT / "bench" / "recipe.py"))
    schema = StructType([StructField("raw", BinaryType())])
    results = {}
    try:
        for corpus in corpora:
            html = corpus.html

            @pandas_udf(LongType())  # type: ignore[call-overload]
            def recipe_batch(raw: pd.Series) -> pd.Series:
                from recipe import recipe_simhashes as fn

                from simhash_udf.core.html_text import html_to_text as extract

                texts = [v.decode("utf-8", errors="replace") for v in raw]
                if html:
                    texts = [extract(t) for t in texts]
                return pd.Series(fn(texts), dtype="int64")

            rows = [(t.encode("utf-8"),) for t in corpus.texts]
            # Several partitions per core so both cores stay busy to the end.
            df = spark.createDataFrame(rows, schema).repartition(4 * SPARK_CORES).cache()
            df.count()
            raw = F.col("raw")
            plans = {
                # --extract all: the same html_to_text as the recipe's UDF, so the two differ in
                # fingerprinting only (the job's default, main-content extraction, is timed in
                # bench/extractors.py).
                "ours": lambda d: d.select(udfs.simhash(udfs.normalised_text(raw, html, "all").getField("text"), CONFIG)),
                "recipe (pandas UDF)": lambda d: d.select(recipe_batch(raw)),
            }
            for plan in plans.values():  # start the Python workers, load dictionaries
                plan(df.limit(8)).write.format("noop").mode("overwrite").save()
            runs = interleaved(
                {name: (lambda plan=plan: plan(df).write.format("noop").mode("overwrite").save())
                 for name, plan in plans.items()},
                repeats,
            )
            mb = corpus.n_bytes / 1e6
            results[corpus.name] = {
                name: {
                    "mb": mb,
                    "wall_s": [round(s, 3) for s in r.wall_s],
                    "mb_per_s_per_core": mb / statistics.median(r.wall_s) / SPARK_CORES,
                }
                for name, r in runs.items()
            }
            df.unpersist()
    finally:
        spark.stop()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small samples (about a minute)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each method (median reported)")
    parser.add_argument("--zh-docs", type=int, default=None, help="Chinese documents (default: all; --quick 120)")
    parser.add_argument("--en-mb", type=float, default=None, help="MB of English HTML (default 12; --quick 2)")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark stage")
    parser.add_argument("--spark-memory", default="2g")
    args = parser.parse_args(argv)
    missing = [name for name in ("simhash", "rjieba") if importlib.util.find_spec(name) is None]
    if missing:
        print(f"fingerprint_throughput: {', '.join(missing)} missing: install the bench extra "
              "(.venv/bin/pip install -e '.[bench]')", file=sys.stderr)
        return 2

    en_mb = args.en_mb if args.en_mb is not None else (2.0 if args.quick else 12.0)
    try:
        zh = peoples_daily()
        en = python_doc_html(max_bytes=int(en_mb * 1e6))
    except CorpusError as error:
        print(f"fingerprint_throughput: {error}", file=sys.stderr)
        return 2
    zh_docs = args.zh_docs if args.zh_docs is not None else (120 if args.quick else None)
    if zh_docs is not None:
        zh = Corpus(zh.name, zh.source, zh.html, zh.texts[:zh_docs])

    report: dict = {"repeats": args.repeats, "load_start": load_average(), "corpora": {}}
    for corpus in (zh, en):
        report["corpora"][corpus.name] = {
            "source": corpus.source, "documents": len(corpus.texts), "mb": corpus.n_bytes / 1e6,
            "chars": corpus.n_chars, "html": corpus.html,
        }

    started = time.perf_counter()
    report["single"] = {}
    zh_methods = {
        "ours": ours,
        "ours, --segmenter jieba": ours_jieba,
        "ours, stage 1: normalise": ours_normalise,
        "ours, stages 1-2: normalise + tokens": ours_tokens,
        "recipe": recipe_simhashes,
        "simhash-pkg": simhash_pkg,
        "simhash-pkg on our tokens": simhash_pkg_our_tokens,
        "jieba tokens": jieba_cut,
        "rjieba tokens": rjieba_cut,
    }
    report["single"]["zh"] = time_methods(zh.texts, zh_methods, args.repeats)
    print(f"zh single-process done in {time.perf_counter() - started:.0f} s", file=sys.stderr)

    en_text = [html_to_text(t) for t in en.texts]
    report["corpora"]["en"]["text_mb"] = _mb(en_text)
    report["single"]["en_html"] = time_methods(en.texts, {"html_to_text": lambda ts: [html_to_text(t) for t in ts]}, args.repeats)
    en_methods = {k: v for k, v in zh_methods.items()
                  if k not in ("jieba tokens", "rjieba tokens", "ours, --segmenter jieba")}
    report["single"]["en"] = time_methods(en_text, en_methods, args.repeats)
    print(f"en single-process done in {time.perf_counter() - started:.0f} s", file=sys.stderr)

    report["token_equality"] = token_equality(zh.texts)
    report["token_equality_han_runs"] = token_equality(zh.texts, han_runs_only=True)
    print(f"token equality done in {time.perf_counter() - started:.0f} s", file=sys.stderr)

    if not args.no_spark:
        report["spark"] = spark_stage([zh, en], args.repeats, args.spark_memory)
        print(f"spark done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    report["load_end"] = load_average()
    report["seconds"] = time.perf_counter() - started
    json.dump(report, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
