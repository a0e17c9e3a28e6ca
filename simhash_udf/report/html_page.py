"""`report.html`: the run's report as one page a person can look at.

`render(report, samples)` turns the dict that becomes `report.json` (see `report.build`) and a
few near-duplicate pairs with their texts into one self-contained HTML string: no external
CSS, scripts, fonts or images; the histograms and stage times are inline SVG drawn by
`bar_chart_svg`; every text from the data is escaped. The markup is also well-formed XML, so
tests (and tools) can parse it strictly. Pure Python: the pairs are collected by
`report/pair_samples.sample_pairs`.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simhash_udf.report.textdiff import side_by_side

_BAR = "#4a78b5"
_STAGE_BAR = "#6a9f58"


@dataclass(frozen=True)
class PairSample:
    """One near-duplicate pair as the page shows it.

    text_a / text_b: the start of each document's text (`pair_samples.SAMPLE_CHARS`
    characters; None when the input has no text column, e.g. with --fingerprint-col);
    truncated_a / truncated_b say whether the text was longer. jaccard: the Jaccard
    similarity the pair's sketches estimate (pairs/'s `jaccard`; None without sketches).
    """

    id_a: Any
    id_b: Any
    distance: int
    text_a: str | None = None
    text_b: str | None = None
    truncated_a: bool = False
    truncated_b: bool = False
    jaccard: float | None = None


def _e(value: Any) -> str:
    """Any value as escaped HTML text."""
    return html.escape(str(value), quote=True)


def _n(value: Any) -> str:
    """A number with thousands separators (anything else escaped as is)."""
    if isinstance(value, bool):
        return _e(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.1f}" if value >= 100 else f"{value:,.3g}"
    return _e(value)


def bar_chart_svg(
    bars: Sequence[tuple[str, float]],
    *,
    title: str,
    horizontal: bool = False,
    unit: str = "",
    color: str = _BAR,
    plot_size: int = 200,
) -> str:
    """An inline SVG bar chart: one `<rect>` per (label, value), its length proportional to
    the value (the largest value spans `plot_size` pixels; a non-zero value gets at least one
    pixel so it stays visible), the value written beside it. Vertical bars (histograms) by
    default, horizontal ones (stage times) with `horizontal`. Each rect carries
    `data-label` and `data-value` so the picture can be checked against the data."""
    peak = max((v for _, v in bars), default=0) or 1

    def length(value: float) -> float:
        scaled = value / peak * plot_size
        return round(max(scaled, 1.0) if value > 0 else 0.0, 2)

    def shown(value: float) -> str:
        text = f"{value:,.1f}" if isinstance(value, float) and not float(value).is_integer() else f"{int(value):,}"
        return text + unit

    parts: list[str] = []
    if horizontal:
        label_w, row_h, gap = 190, 20, 6
        width = label_w + plot_size + 90
        height = len(bars) * (row_h + gap) + gap
        for i, (label, value) in enumerate(bars):
            y = gap + i * (row_h + gap)
            w = length(value)
            parts.append(
                f'<text x="{label_w - 8}" y="{y + row_h * 0.72:.1f}" text-anchor="end">{_e(label)}</text>'
                f'<rect x="{label_w}" y="{y}" width="{w}" height="{row_h}" fill="{color}" '
                f'data-label="{_e(label)}" data-value="{_e(value)}"><title>{_e(label)}: {_e(shown(value))}</title></rect>'
                f'<text x="{label_w + w + 6:.2f}" y="{y + row_h * 0.72:.1f}">{_e(shown(value))}</text>'
            )
    else:
        bar_w, gap, top, bottom, left = 46, 14, 22, 26, 10
        width = left + len(bars) * (bar_w + gap) + gap
        height = top + plot_size + bottom
        base = top + plot_size
        for i, (label, value) in enumerate(bars):
            x = left + gap + i * (bar_w + gap)
            h = length(value)
            cx = x + bar_w / 2
            parts.append(
                f'<rect x="{x}" y="{base - h:.2f}" width="{bar_w}" height="{h}" fill="{color}" '
                f'data-label="{_e(label)}" data-value="{_e(value)}"><title>{_e(label)}: {_e(shown(value))}</title></rect>'
                f'<text x="{cx:.1f}" y="{base - h - 5:.2f}" text-anchor="middle">{_e(shown(value))}</text>'
                f'<text x="{cx:.1f}" y="{base + 17}" text-anchor="middle">{_e(label)}</text>'
            )
        parts.append(f'<line x1="{left}" y1="{base}" x2="{width}" y2="{base}" stroke="#555"/>')
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12" fill="#222">'
        f"<title>{_e(title)}</title>{''.join(parts)}</svg>"
    )


def _table(rows: Sequence[tuple[str, Any]], cls: str = "kv") -> str:
    """Two columns: an escaped label and a number (or escaped text)."""
    body = "".join(f'<tr><th scope="row">{_e(k)}</th><td>{_n(v)}</td></tr>' for k, v in rows)
    return f'<table class="{cls}">{body}</table>'


def _grid(header: Sequence[str], rows: Sequence[Sequence[Any]], cls: str = "grid") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_n(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _by_reason(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{_e(reason)} {_n(n)}" for reason, n in sorted(counts.items())) or "none"


def _counts_section(report: Mapping[str, Any]) -> str:
    c = report["counts"]
    skipped, rejected = c.get("skipped", {}), c.get("rejected_rows", {})
    tiles = [
        ("documents", c["documents"]),
        ("kept", c["kept"]),
        ("exact duplicates", c["exact_duplicates"]),
        ("near duplicates", c["near_duplicates"]),
        ("skipped", sum(skipped.values())),
        ("rejected rows", sum(rejected.values())),
    ]
    tile_html = "".join(
        f'<div class="tile" data-count="{_e(name)}"><div class="num">{_n(v)}</div><div class="lbl">{_e(name)}</div></div>'
        for name, v in tiles
    )
    # The tiles give the headline counts; the table the rest (and the breakdowns).
    detail = [
        ("input rows", c["input_rows"]),
        ("skipped, by reason", _by_reason(skipped)),
        ("rejected rows, by reason", _by_reason(rejected)),
        ("clusters", c["clusters"]),
        ("too short for a fingerprint", c.get("too_short", 0)),
    ]
    for key, label in (
        ("distinct_texts", "distinct texts"),
        ("too_short_texts", "distinct texts too short"),
        ("invalid_utf8_documents", "documents with invalid UTF-8"),
        ("distinct_fingerprints", "distinct fingerprints"),
    ):
        if key in c:
            detail.append((label, c[key]))
    return f'<section id="counts"><h2>Counts</h2><div class="tiles">{tile_html}</div>{_table(detail)}</section>'


def _join_section(report: Mapping[str, Any]) -> str:
    p, j = report["band_plan"], report["join"]
    # Against an index, the batch's own join has a plan of its own (band_plan.self_join).
    own = p.get("self_join")
    plan_rows = [
        ("k (largest distance)", p["k"]),
        ("blocks", p["blocks"]),
        ("tables", p["tables"]),
        ("key bits", ", ".join(str(b) for b in p["key_bits"])),
        ("chosen by", p["chosen_by"]),
        *([("the batch's self-join", f"{own['blocks']} blocks, {own['tables']} tables ({own['chosen_by']})")] if own else []),
        ("rows shuffled", p["rows_shuffled"]),
        ("expected random candidates", p["expected_random_candidates"]),
    ]
    join_rows = [
        ("candidate pairs", j["candidate_pairs"]),
        ("verified pairs", j["verified_pairs"]),
        ("largest bucket", j["largest_bucket"]),
    ]
    hot = j.get("hot_buckets", [])
    if hot:
        hot_html = _grid(
            ["table", "blocks", "key", "members"],
            [(b["table"], ", ".join(str(x) for x in b["blocks"]), b["key"], b["size"]) for b in hot],
            cls="grid hot",
        )
        if j.get("pairs_summarised"):
            hot_html += (
                f'<p class="summarised">{j.get("summarised_buckets", 0):,} hot bucket(s) summarised: '
                f'pairs/ holds {j.get("summary_edges", 0):,} of their pairs, enough for exact clusters '
                "(each member linked to an anchor within k), not all of them.</p>"
            )
    else:
        threshold = j.get("hot_bucket_threshold")
        limit = f" (more than {threshold:,} members)" if threshold else ""
        hot_html = f'<p class="none">No hot buckets{_e(limit)}.</p>'
    return (
        '<section id="join"><h2>Band plan and join</h2><div class="cols">'
        f"<div><h3>Band plan</h3>{_table(plan_rows)}</div>"
        f"<div><h3>Join</h3>{_table(join_rows)}<h3>Hot buckets</h3>{hot_html}</div>"
        "</div></section>"
    )


def _histograms_section(report: Mapping[str, Any]) -> str:
    sizes = [(label, n) for label, n in report.get("cluster_sizes", {}).items()]
    distances = [(label, n) for label, n in report.get("distances", {}).items()]
    size_chart = (
        bar_chart_svg(sizes, title="clusters by size (documents)")
        if sizes else '<p class="none">No clusters.</p>'
    )
    distance_chart = (
        bar_chart_svg(distances, title="verified pairs by distance (bits)")
        if distances else '<p class="none">No verified pairs.</p>'
    )
    return (
        '<section id="histograms"><h2>Histograms</h2><div class="cols">'
        f'<figure id="cluster-sizes">{size_chart}<figcaption>Clusters by size (documents per cluster)</figcaption></figure>'
        f'<figure id="distances">{distance_chart}<figcaption>Verified pairs by Hamming distance (bits)</figcaption></figure>'
        "</div></section>"
    )


def _stages_section(report: Mapping[str, Any]) -> str:
    seconds = report.get("stage_seconds", {})
    rows = report.get("stage_rows", {})
    bars = [(name, float(s)) for name, s in seconds.items()]
    chart = bar_chart_svg(bars, title="stage wall times (s)", horizontal=True, unit=" s", color=_STAGE_BAR) if bars else ""
    table = _grid(
        ["stage", "seconds", "rows"],
        [(name, f"{float(s):,.1f}", rows.get(name, "")) for name, s in seconds.items()],
    )
    total = report.get("total_seconds")
    total_html = f"<p>Total {float(total):,.1f} s.</p>" if total is not None else ""
    return (
        '<section id="stages"><h2>Stage times</h2>'
        f'<div class="cols"><figure id="stage-times">{chart}</figure><div>{table}{total_html}</div></div></section>'
    )


def _pair_html(sample: PairSample) -> str:
    caption = f"{sample.id_a} and {sample.id_b}: {sample.distance} bits apart"
    if sample.jaccard is not None:
        caption += f", estimated Jaccard {sample.jaccard:.2f}"
    if sample.text_a is None or sample.text_b is None:
        return f'<div class="pair-sample"><h3>{_e(caption)}</h3><p class="none">No text to show.</p></div>'
    notes = [
        f"id {_e(i)}: only the first {len(t):,} characters are shown"
        for i, t, cut in ((sample.id_a, sample.text_a, sample.truncated_a), (sample.id_b, sample.text_b, sample.truncated_b))
        if cut
    ]
    note = f'<p class="note">{"; ".join(notes)}.</p>' if notes else ""
    table = side_by_side(sample.text_a, sample.text_b, f"id {sample.id_a}", f"id {sample.id_b}")
    return f'<div class="pair-sample"><h3>{_e(caption)}</h3>{note}{table}</div>'


def _pairs_section(report: Mapping[str, Any], samples: Sequence[PairSample]) -> str:
    params = report.get("parameters", {})
    verified = report["join"]["verified_pairs"]
    if samples:
        intro = (
            f"<p>{len(samples)} of {verified:,} verified pairs, the furthest apart first. "
            '<mark class="del">Red</mark>: only in the left text; <mark class="add">green</mark>: '
            "only in the right one.</p>"
        )
        body = "".join(_pair_html(s) for s in samples)
    elif not params.get("write_pairs", True):
        intro, body = '<p class="none">No sample: pairs were not written (--no-pairs).</p>', ""
    elif verified == 0:
        intro = f'<p class="none">No near-duplicate pairs: no two distinct fingerprints within k = {_e(params.get("k", "?"))} bits.</p>'
        body = ""
    else:
        intro, body = '<p class="none">No sample of the pairs was collected.</p>', ""
    return f'<section id="pairs"><h2>Near-duplicate pairs</h2>{intro}{body}</section>'


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","WenQuanYi Micro Hei",sans-serif;
margin:0;padding:24px 32px;color:#222;background:#fafafa;line-height:1.4}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:0 0 12px;border-bottom:2px solid #dde3ea;padding-bottom:4px}
h3{font-size:15px;margin:12px 0 6px}
section{background:#fff;border:1px solid #e2e6ea;border-radius:6px;padding:16px 20px;margin:16px 0}
.meta{color:#555;font-size:13px}.meta code{background:#eef1f4;padding:1px 4px;border-radius:3px}
.tiles{display:flex;flex-wrap:wrap;gap:12px;margin-bottom:14px}
.tile{background:#f2f6fb;border:1px solid #d6e0ec;border-radius:6px;padding:10px 16px;min-width:120px}
.tile .num{font-size:24px;font-weight:600;color:#1f4e8c}.tile .lbl{font-size:13px;color:#555}
.cols{display:flex;flex-wrap:wrap;gap:32px;align-items:flex-start}
table{border-collapse:collapse;font-size:13px}
table.kv th{text-align:left;font-weight:normal;color:#555;padding:3px 16px 3px 0}
table.kv td{text-align:right;font-variant-numeric:tabular-nums;padding:3px 0}
table.grid th,table.grid td{border:1px solid #dde3ea;padding:3px 10px}
table.grid td{text-align:right;font-variant-numeric:tabular-nums}table.grid td:first-child{text-align:left}
table.grid thead th{background:#f2f6fb}
figure{margin:0}svg.chart{max-width:100%;height:auto}figcaption{font-size:13px;color:#555;margin-top:4px}
.none{color:#666;font-style:italic}.note{color:#8a5a00;font-size:13px}
.pair-sample{margin:14px 0 22px}
table.pair{width:100%;table-layout:fixed;font-size:13px}
table.pair th{background:#f2f6fb;border:1px solid #dde3ea;padding:4px 8px;text-align:left}
table.pair td{border:1px solid #dde3ea;padding:6px 8px;overflow-wrap:anywhere}
mark.del{background:#fcc}mark.add{background:#cfc}
"""


def render(report: Mapping[str, Any], samples: Sequence[PairSample] = ()) -> str:
    """The whole page: counts, band plan and join, histograms, stage times, sample pairs.

    report: the dict written as `report.json` (`report.build`, plus `output`).
    samples: a few pairs with their texts (`sample_pairs`); none is fine.
    """
    params = report.get("parameters", {})
    source = report.get("input", {})
    fp = params.get("fingerprint", {})
    settings = ", ".join(
        f"{name} {value}"
        for name, value in (
            ("k", params.get("k")),
            ("tokenizer", fp.get("tokenizer")),
            ("n-gram", fp.get("ngram")),
            ("weighting", fp.get("weighting")),
            ("min features", fp.get("min_features")),
        )
        if value is not None
    )
    meta = (
        f'<p class="meta">Input <code>{_e(source.get("path", "?"))}</code> ({_e(source.get("format", "?"))}); '
        f'output <code>{_e(report.get("output", "?"))}</code>; started {_e(report.get("started_at", "?"))}; '
        f"simhash-udf {_e(report.get('simhash_udf_version', '?'))}; {_e(settings)}.</p>"
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8"/>'
        '<meta name="viewport" content="width=device-width, initial-scale=1"/>'
        f"<title>Near-duplicate report: {_e(source.get('path', ''))}</title>"
        f"<style>{_CSS}</style></head><body>"
        f"<h1>Near-duplicate report</h1>{meta}"
        f"{_counts_section(report)}{_histograms_section(report)}{_join_section(report)}"
        f"{_stages_section(report)}{_pairs_section(report, samples)}"
        "</body></html>\n"
    )
