"""The clusters' rules on plain values: which document each cluster keeps, and every status.

The same rules as `simhash_udf.stages.clusters.cluster_assignment` (its docstring states them),
applied in one Python pass: `simhash_udf.stages.clusters.assigned_on_driver` applies them for a
small run, whose documents fit in the driver, where Spark's aggregates and joins cost about ten
Spark jobs (1.5-2.5 s) for any number of rows. Values compare as Spark compares them: ids are integers or strings (Python's
order of `str` is Spark's order of UTF-8 bytes), and a `keep_by` float NaN is larger than every
number and equal to itself.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, NamedTuple

KEPT = "kept"
EXACT_DUPLICATE = "exact_duplicate"
NEAR_DUPLICATE = "near_duplicate"
SKIPPED = "skipped"
TOO_SHORT = "too_short"


class Document(NamedTuple):
    """A document as the clusters see it: `id` (int or str, unique, not None), `exact_key`
    (bytes; None without a text), `fingerprint` (signed 64-bit int; None without one), `reason`
    (None, `too_short`, or a skip reason), `keep_by` (any comparable value; None when it has
    none, or when the run has no keep_by)."""

    id: Any
    exact_key: bytes | None
    fingerprint: int | None
    reason: str | None
    keep_by: Any = None


class Assigned(NamedTuple):
    """A document's row of clusters/: `cluster_id` (the kept document's id; None when skipped),
    `status`, `distance` (bits to the kept document's fingerprint, when both have one)."""

    id: Any
    cluster_id: Any
    fingerprint: int | None
    status: str
    reason: str | None
    distance: int | None


def assign_clusters(
    documents: Sequence[Document],
    component_of: Mapping[int, int],
    keep_by: bool = False,
    keep_order: str = "asc",
) -> tuple[list[Assigned], list[tuple[Any, int]]]:
    """Every document's cluster and status, and each cluster's size.

    component_of: fingerprint -> component, for the fingerprints with a near duplicate (any
    other fingerprint is its own component). keep_by: the documents' `keep_by` chooses the kept
    document, first in `keep_order` (`asc` or `desc`; None after every value either way; ties,
    or no value at all, fall back to the smallest id); else the smallest id.
    Returns (one `Assigned` per document, in `documents`' order; one (`cluster_id`, members)
    per cluster).
    """
    clusters: dict[Hashable, list[Document]] = {}
    for doc in documents:
        if doc.reason is not None and doc.reason != TOO_SHORT:
            continue
        if doc.fingerprint is None:
            # Only a document without a fingerprint is grouped by its exact text.
            key: Hashable = (None, doc.exact_key)
        else:
            key = (component_of.get(doc.fingerprint, doc.fingerprint), None)
        clusters.setdefault(key, []).append(doc)
    kept_of: dict[Any, Document] = {}  # a document's id -> its cluster's kept document
    sizes = []
    for members in clusters.values():
        kept = _kept_document(members, keep_by, keep_order)
        sizes.append((kept.id, len(members)))
        for doc in members:
            kept_of[doc.id] = kept
    rows = []
    for doc in documents:
        kept = kept_of.get(doc.id)
        if kept is None:
            rows.append(Assigned(doc.id, None, doc.fingerprint, SKIPPED, doc.reason, None))
            continue
        if doc.id == kept.id:
            status = KEPT
        elif doc.exact_key is not None and doc.exact_key == kept.exact_key:
            status = EXACT_DUPLICATE
        else:
            # Two documents without an exact key (fingerprints given) are never exact copies.
            status = NEAR_DUPLICATE
        distance = None
        if doc.fingerprint is not None and kept.fingerprint is not None:
            distance = ((doc.fingerprint ^ kept.fingerprint) & (2**64 - 1)).bit_count()
        rows.append(Assigned(doc.id, kept.id, doc.fingerprint, status, doc.reason, distance))
    return rows, sizes


def _kept_document(members: list[Document], keep_by: bool, keep_order: str) -> Document:
    """The cluster's kept document: the smallest id among those first by `keep_by`."""
    candidates = members
    if keep_by:
        values = [_order_key(doc.keep_by) for doc in members if doc.keep_by is not None]
        if values:
            best = max(values) if keep_order == "desc" else min(values)
            candidates = [doc for doc in members if doc.keep_by is not None and _order_key(doc.keep_by) == best]
    return min(candidates, key=lambda doc: doc.id)


def _order_key(value: Any) -> Any:
    """`value` as Spark orders it: a float NaN after every number, and equal to itself."""
    if isinstance(value, float):
        return (1, 0.0) if math.isnan(value) else (0, value)
    return value
