"""Find near-duplicate documents in a crawl and write the deduplicated crawl.

    spark-submit jobs/dedupe.py --input crawl/ --output out/        (or ./submit.sh ...)

Entry point only: the command line and its config. Everything else (the session, the finder,
--explain, the console summary) comes from `simhash_udf.run.api`; the work is
`simhash_udf.run.pipeline.run`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from py4j.protocol import Py4JNetworkError
from pyspark import SparkContext
from pyspark.sql import SparkSession

from simhash_udf.run import api
from simhash_udf.run.api import (
    EXTRACT_MODES,
    MAX_K,
    SEGMENTERS,
    TOKENIZERS,
    WEIGHTINGS,
    ConfigError,
    DedupeConfig,
    FingerprintConfig,
    IndexOptions,
    SketchConfig,
    VerifyConfig,
)

DEFAULTS = DedupeConfig()


def build_parser() -> argparse.ArgumentParser:
    fp = DEFAULTS.fingerprint
    parser = argparse.ArgumentParser(
        prog="dedupe.py",
        description=(
            "Find near-duplicate documents with 64-bit simhash fingerprints and a band-split "
            "self-join, cluster them, and write every document's status and the deduplicated "
            "rows. Outputs under --output: clusters/ (every input document: id, cluster_id, "
            "fingerprint, status, reason, distance), pairs/ (id_a, id_b, distance), deduped/ "
            "(the kept input rows), rejected/ (rows that cannot be documents, if any, with a "
            "reason: unparseable, null_id, duplicate_id (all rows of a repeated id but one), "
            "damaged_file), report.json (which also names damaged input files) and report.html "
            "(the report as a page: histograms, stage times, near-duplicate pairs side by "
            "side). Bad data is counted, never fatal; exit code 2 only for a wrong command line. The output "
            "appears only when the whole run succeeded."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    data = parser.add_argument_group("input and output")
    data.add_argument("--input", required=True, help="a file, a folder or a glob (local, hdfs://, s3a://, ...)")
    data.add_argument(
        "--format", choices=api.FORMATS, default=None,
        help="input format: parquet, json (JSON Lines), csv (with a header row), text (one "
        "document per file, id = file path), warc (one document per HTML response record: id = "
        "WARC-Record-ID, url, fetch_time = WARC-Date; the HTML path applies, charset from the HTTP "
        "header, <meta> or detection) or wet (one per conversion record, plain text); WARC/WET "
        "gzip or plain, one Spark task per file; revisits, non-HTML and other records are counted "
        "by reason in report.json, damaged records are skipped and named, ARC files are skipped "
        "(docs/input.md); inferred from the file extensions (.warc, .warc.gz, .wet, .wet.gz, ...) "
        "when left out",
    )
    data.add_argument("--output", help="output folder; must not exist unless --overwrite (required unless --explain)")
    data.add_argument("--overwrite", action="store_true", help="replace an existing output (only once the new one is complete)")
    data.add_argument("--id-col", default=DEFAULTS.id_col, help="unique document id column (integers or strings; the type is kept; JSON/CSV ids "
        "of other types in some rows are read as strings); rows of a repeated id but one go to rejected/")
    data.add_argument("--text-col", default=DEFAULTS.text_col, help="text column")
    data.add_argument("--html", action="store_true", help="the text column holds HTML: fingerprint the text --extract says")
    data.add_argument(
        "--extract", choices=EXTRACT_MODES, default=None,
        help="what of an HTML page is fingerprinted (HTML input only: --html or --format warc; "
        "an error otherwise): main = its main content, without navigation, headers, footers and "
        "link lists (trafilatura; a page where none is found keeps all its visible text, counted "
        "as extract_fallbacks in report.json); all = all visible text. Default for HTML: main "
        "(docs/extraction.md)",
    )
    data.add_argument(
        "--fingerprint-col", default=None,
        help="the input already carries signed 64-bit simhash fingerprints in this column: skip "
        "text processing and join on them",
    )

    match = parser.add_argument_group("matching")
    match.add_argument(
        "--k", type=int, default=DEFAULTS.k,
        help=f"largest Hamming distance (0..{MAX_K}) between two 64-bit fingerprints that counts as a near "
        f"duplicate; at most {MAX_K} because beyond it random fingerprints would fill the band join's "
        "hot runs on a 10^9-page crawl and pairs/ could not be complete",
    )
    match.add_argument(
        "--blocks", type=int, default=None,
        help="blocks the 64 bits are cut into for the band join (more than k); by default the "
        "cost model picks the cheapest for the number of distinct fingerprints (report.json shows it)",
    )
    match.add_argument(
        "--tokenizer", choices=TOKENIZERS, default=fp.tokenizer,
        help="auto: jieba on runs of Chinese characters, words elsewhere; jieba (whole text); "
        "word; char (defaults measured on real text: docs/defaults.md)",
    )
    match.add_argument(
        "--segmenter", choices=SEGMENTERS, default=fp.segmenter,
        help="the engine of jieba's segmentation: rjieba (jieba-rs, ~15x faster; jieba's tokens on "
        "all but one of 182k test texts) or jieba (the Python package)",
    )
    match.add_argument("--ngram", type=int, default=fp.ngram, help="features are n-grams of tokens (of characters with --tokenizer char)")
    match.add_argument(
        "--weighting", choices=WEIGHTINGS, default=fp.weighting,
        help="feature weights: logtfidf = (1 + ln count) x IDF; tfidf = count x IDF; idf; tf = "
        "count; binary = 1 each. IDF: jieba's table for Chinese, English word frequencies otherwise",
    )
    match.add_argument(
        "--min-features", type=int, default=fp.min_features,
        help="texts with fewer distinct features get no fingerprint and are matched only as "
        "exact copies (empty texts never get one)",
    )
    match.add_argument("--max-chars", type=int, default=fp.max_chars, help="fingerprint only the first N characters of a normalised text")
    vf = DEFAULTS.verify
    match.add_argument(
        "--verify", default=f"jaccard:{vf.threshold:g}", metavar="{jaccard:T,none}",
        help="the short-text policy (docs/short-texts.md): a pair within k whose shorter text has "
        "fewer than --verify-below characters is kept only when the Jaccard similarity of the two "
        "texts' shingle sets is at least T (0 < T <= 1), checked in Spark on the band join's pairs "
        "only, before the clusters; none keeps every pair within k. Exact copies are never "
        "separated (one text, one fingerprint); report.json's verify counts the pairs checked and "
        "dropped. Text input without --index only",
    )
    match.add_argument(
        "--verify-below", type=int, default=vf.below_chars, metavar="CHARS",
        help="check only pairs whose shorter normalised text has fewer characters than this "
        "(simhash is reliable on long texts); 0 checks every pair",
    )
    match.add_argument(
        "--verify-shingle", type=int, default=vf.shingle, metavar="N",
        help="shingles of the check: word N-grams, character N-grams for text with Chinese characters",
    )

    sk = DEFAULTS.sketch
    match.add_argument(
        "--sketch", default=f"jaccard:{sk.jaccard:g}", metavar="{jaccard:T,none}",
        help="the sketch route beside the band join (docs/quality.md): texts of at least "
        "--sketch-min-chars characters also carry a MinHash sketch (128 16-bit min-hashes of "
        "their token shingles); two whose sketches share one of --sketch-bands bands are "
        "candidates, and a candidate is a near-duplicate pair when the sketches estimate a "
        "Jaccard similarity of at least T and the fingerprints are at most --sketch-max-distance "
        "bits apart. It finds pages that differ by a paragraph, a caption or a footer (4-12 bits "
        "apart, beyond k). Measured (docs/quality.md): 0.75 finds 93%% of pages <-> their "
        "articles against 66%% without the route, merging no rail pair; 0.7 merges one same-site pair "
        "of boilerplate-heavy plain-text pages; 0.85 keeps a margin on such pages but finds 87%%. "
        "none: the band join alone. With --index the index keeps the sketches (docs/index.md)",
    )
    match.add_argument(
        "--sketch-max-distance", type=int, default=sk.max_distance, metavar="BITS",
        help="the sketch route's second check: the fingerprints of a pair it keeps are at most "
        "this many bits apart (pages of one site that share boilerplate share shingles, not "
        "their weighted words); 64 turns the check off",
    )
    match.add_argument(
        "--sketch-min-chars", type=int, default=sk.min_chars, metavar="CHARS",
        help="texts shorter than this get no sketch (short texts are the short-text policy's)",
    )
    match.add_argument(
        "--sketch-shingle", type=int, default=sk.shingle, metavar="N",
        help="the sketch's shingles: N consecutive tokens (of the fingerprint's tokenizer)",
    )
    match.add_argument(
        "--sketch-bands", type=int, default=sk.bands, metavar="B",
        help=f"LSH bands of --sketch-rows min-hashes each (B x rows <= {sk.size}); with "
        f"{sk.bands} x {sk.rows}, a pair of Jaccard 0.7 is a candidate with probability 0.99, "
        "one of 0.3 with 0.06",
    )
    match.add_argument("--sketch-rows", type=int, default=sk.rows, metavar="R", help="min-hashes per LSH band")

    keep = parser.add_argument_group("what is kept")
    keep.add_argument(
        "--keep-by", default=None,
        help="column whose first value (see --keep-order) picks the document a cluster keeps; "
        "default and tie-break: the smallest id",
    )
    keep.add_argument("--keep-order", choices=("asc", "desc"), default=DEFAULTS.keep_order, help="order of --keep-by")
    keep.add_argument("--keep-empty", action="store_true", help="also write empty documents (status skipped) to deduped/")
    keep.add_argument("--no-pairs", action="store_true", help="do not write pairs/")

    daily = parser.add_argument_group("daily runs against an index (docs/index.md)")
    daily.add_argument(
        "--index", default=None,
        help="persistent fingerprint index of earlier runs (created by the first run): the input is "
        "deduplicated against itself and against the index, then its new fingerprints are added; "
        "indexed documents keep their clusters",
    )
    daily.add_argument(
        "--run-id", default=None,
        help="name of this run in the index (default: derived from the input's file listing); "
        "rerunning a run id replaces that run's entries instead of adding to them",
    )
    daily.add_argument(
        "--index-size", type=int, default=IndexOptions.expected_size,
        help="distinct fingerprints a new index is planned for: fixes its band plan for its whole "
        "life (ignored once the index exists)",
    )
    daily.add_argument("--url-col", default=IndexOptions.url_col, help="input column kept as an index entry's url (if present)")
    daily.add_argument(
        "--fetch-time-col", default=IndexOptions.fetch_time_col,
        help="input column kept as an index entry's fetch time (if present)",
    )

    parser.add_argument(
        "--explain", action="store_true",
        help="print the band plan a run would use and why (the cost model for the input's row count, "
        "an upper bound on its distinct fingerprints; --blocks; or, with --index, the index's manifest), "
        "the other plans, and the stages, then stop: nothing is fingerprinted or written",
    )
    parser.add_argument(
        "--master", default=None,
        help="Spark master when run with python rather than spark-submit (default: local mode "
        "on all cores); under ./submit.sh, --master is spark-submit's own option",
    )
    parser.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    return parser


def config_from_args(args: argparse.Namespace) -> DedupeConfig:
    warc_input = args.format == "warc" or (args.format is None and api.named_like_warc(args.input))
    html_input = args.html or warc_input
    if args.extract is not None and not html_input:
        # An option that would silently do nothing is a mistake worth stopping for.
        raise ConfigError(
            f"--extract {args.extract} applies to HTML input only: add --html (the text column "
            "holds HTML) or use --format warc; plain text is fingerprinted as it is"
        )
    return DedupeConfig(
        id_col=args.id_col,
        text_col=args.text_col,
        fingerprint_col=args.fingerprint_col,
        # WARC records are HTML: the run (and an index's recorded settings) take the HTML path.
        html=html_input,
        extract=args.extract or "main",
        k=args.k,
        blocks=args.blocks,
        keep_by=args.keep_by,
        keep_order=args.keep_order,
        keep_empty=args.keep_empty,
        write_pairs=not args.no_pairs,
        fingerprint=FingerprintConfig(
            tokenizer=args.tokenizer,
            segmenter=args.segmenter,
            ngram=args.ngram,
            weighting=args.weighting,
            min_features=args.min_features,
            max_chars=args.max_chars,
        ),
        verify=VerifyConfig(
            threshold=api.parse_spec(args.verify),
            below_chars=args.verify_below or None,
            shingle=args.verify_shingle,
        ),
        sketch=SketchConfig(
            jaccard=api.parse_spec(args.sketch, "--sketch"),
            max_distance=args.sketch_max_distance,
            min_chars=args.sketch_min_chars,
            shingle=args.sketch_shingle,
            bands=args.sketch_bands,
            rows=args.sketch_rows,
        ),
    )


def run_job(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> int:
    """The job: parse `argv`, run (or explain) it; the exit code. `main` is this, saying which
    memory setting to raise when Spark runs out."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.output and not args.explain:
        parser.error("the following arguments are required: --output")
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    try:
        config = config_from_args(args)
    except ConfigError as error:
        print(f"dedupe.py: error: {error}", file=sys.stderr)
        return 2
    # A run over texts starts a local driver JVM that compiles with C1 only (session.QUICK_JIT).
    spark = spark or api.get_session(master=args.master, quick_jit=config.fingerprint_col is None)
    if args.explain:
        try:
            print(api.explain_run(spark, config, args.input, args.format, args.index, args.index_size))
        except api.InputError as error:
            print(f"dedupe.py: error: {error}", file=sys.stderr)
            return 2
        return 0
    try:
        index = None
        if args.index:  # IndexOptions refuses an empty --run-id or a --index-size under 2
            index = IndexOptions(args.index, args.run_id, args.index_size, args.url_col, args.fetch_time_col)
        finder = api.open_finder(spark, config, args.input, index)
        result = api.run(spark, config, args.input, args.output, args.format, args.overwrite, finder=finder)
    except (ConfigError, api.InputError, api.OutputError) as error:
        print(f"dedupe.py: error: {error}", file=sys.stderr)
        return 2
    print(api.summary(result))
    logging.getLogger("simhash_udf").debug("report: %s", json.dumps(result))
    return 0


# How long main waits for a driver JVM that lost its connection to exit (5 s was too short
# in CI: the exit code was not in yet, and the out-of-memory line was not printed).
JVM_EXIT_WAIT_SECONDS = 120.0
# How long main waits for its own JVM to exit after any other unexpected error (only when this
# Python started the JVM: `python jobs/dedupe.py`; spark-submit's JVM is not this process's child).
JVM_EXIT_GRACE_SECONDS = 20.0


def main(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> int:
    """`run_job`; when it fails because Spark ran out of memory, one line saying which setting
    to raise comes first, then the error as Spark gave it (issue 11, item 6)."""
    try:
        return run_job(argv, spark)
    except Exception as error:
        context = SparkContext._active_spark_context
        # A JVM that died (local mode's exit 52 on OutOfMemoryError) shows here as a lost
        # connection: its exit code says why. Its shutdown hooks (stopping the context,
        # deleting scratch) can take tens of seconds on a loaded machine, so wait for it.
        lost = isinstance(error, (Py4JNetworkError, ConnectionError))
        try:
            text = str(error)
        except Exception:  # a Py4JJavaError asks its JVM for its text: a dead JVM cannot answer
            text, lost = "", True
        # A JVM still answering may be dying too: a task that ran out of memory while writing
        # fails the job with an error whose text does not name the OutOfMemoryError, and the
        # JVM exits with 52 a moment later (CI saw this), so wait a little for it as well
        # (not for a session the caller passed in: that JVM is the caller's, and lives on).
        wait = JVM_EXIT_WAIT_SECONDS if lost else (JVM_EXIT_GRACE_SECONDS if spark is None else 0.0)
        hint = api.memory_hint(text, context.master if context else None, api.jvm_exit_code(wait))
        if hint:
            # One write, newline included: PySpark's accumulator thread may be printing a
            # traceback at this moment (its connection to a dead JVM fails), and print()'s
            # separate write of the newline let CI's log split the line.
            sys.stderr.write(hint + "\n")
            sys.stderr.flush()
        raise


if __name__ == "__main__":
    sys.exit(main())
