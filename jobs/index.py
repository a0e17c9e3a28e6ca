"""Maintain a fingerprint index built by `jobs/dedupe.py --index` (see docs/index.md).

    python jobs/index.py info --index PATH             size, band plan, runs (--json for all)
    python jobs/index.py compact --index PATH          merge segments; drop unused folders
                                                       (refused, exit 2, while a run is going)
    python jobs/index.py remove-run --index PATH RUN   a new version without that run

Command line only (through `simhash_udf.run.api`); the work is `simhash_udf.index.admin`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from pyspark.sql import SparkSession

from simhash_udf.run import api


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="index.py",
        description="Show, compact or undo runs of a fingerprint index. Every change is published "
        "as a new version of the index, all at once.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--master", default=None, help="Spark master (default: local mode)")
    parser.add_argument("--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    commands = parser.add_subparsers(dest="command", required=True)
    info = commands.add_parser("info", help="the newest version: size, band plan, runs")
    info.add_argument("--index", required=True)
    info.add_argument("--json", action="store_true", help="print everything as JSON")
    compact = commands.add_parser(
        "compact", help="merge all segments into one and delete folders no version uses"
    )
    compact.add_argument("--index", required=True)
    compact.add_argument(
        "--min-age", type=float, default=api.DEFAULT_MIN_AGE_SECONDS,
        help="leave unreferenced folders younger than this many seconds (besides the leases that "
        "keep compact and runs apart: a second guard)",
    )
    compact.add_argument(
        "--keep-last", type=int, default=0, metavar="N",
        help="leave the segments of the newest N runs unmerged, so that they can still be rerun "
        "with the same --run-id (the daily DAG passes 1)",
    )
    remove = commands.add_parser("remove-run", help="publish a version without one run's entries")
    remove.add_argument("--index", required=True)
    remove.add_argument("run_id")
    remove.add_argument(
        "--force", action="store_true",
        help="remove it even if later runs followed (their documents may name its clusters)",
    )
    return parser


def _info_text(info: dict) -> str:
    plan = info["band_plan"]
    lines = [
        f"index {info['path']}: version {info['version']}, {info['entries']:,} entries, "
        f"{info['key_rows']:,} key rows, {info['bytes']:,} bytes in {info['segments']} segment(s)",
        f"band plan: k = {plan['k']}, {plan['blocks']} blocks, {plan['tables']} tables; ids {info['id_type']}",
        f"runs ({len(info['runs'])}):",
    ]
    for run in info["runs"]:
        lines.append(
            f"  {run['seq']:>4} {run['run_id']:<30} {run['entries']:>12,} entries  {run['published_at']}"
        )
    for holder in info["live_leases"]:
        lines.append(f"going now: {holder.get('kind')} {holder.get('name')!r} (pid {holder.get('pid')} on {holder.get('host')})")
    if info["unreferenced_segments"]:
        lines.append(f"unreferenced folders (compact removes them): {len(info['unreferenced_segments'])}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    spark = spark or api.get_session("simhash-index", master=args.master)
    try:
        if args.command == "info":
            info = api.describe_index(spark, args.index)
            print(json.dumps(info, indent=2) if args.json else _info_text(info))
        elif args.command == "compact":
            print(json.dumps(api.compact_index(spark, args.index, args.min_age, args.keep_last), indent=2))
        else:
            print(json.dumps(api.remove_index_run(spark, args.index, args.run_id, args.force), indent=2))
    except (api.InputError, api.OutputError) as error:
        print(f"index.py: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
