"""The clusters' rules on plain values (`core.cluster_rules`), without Spark: the cases where
Python's order could differ from Spark's. Expected rows are worked out by hand from the rules
in `stages.clusters.cluster_assignment`'s docstring; tests/stages/test_clusters.py checks the
two implementations against each other on Spark frames."""

from __future__ import annotations

from simhash_udf.core.cluster_rules import (
    EXACT_DUPLICATE,
    KEPT,
    NEAR_DUPLICATE,
    SKIPPED,
    Assigned,
    Document,
    assign_clusters,
)

NAN = float("nan")


def _by_id(rows: list[Assigned]) -> dict:
    return {row.id: row for row in rows}


def test_nan_comes_after_every_number_and_ties_with_itself():
    # One component {5, 6}: keep_by NaN, 3.0, NaN, None.
    documents = [
        Document(1, b"a", 5, None, NAN),
        Document(2, b"b", 6, None, 3.0),
        Document(3, b"c", 5, None, NAN),
        Document(4, b"d", 6, None, None),
    ]
    component_of = {5: 5, 6: 5}
    ascending, _ = assign_clusters(documents, component_of, keep_by=True, keep_order="asc")
    assert {row.cluster_id for row in ascending} == {2}  # 3.0 < NaN
    descending, sizes = assign_clusters(documents, component_of, keep_by=True, keep_order="desc")
    assert {row.cluster_id for row in descending} == {1}  # NaN first; 1 and 3 tie: the smallest id
    assert sizes == [(1, 4)]


def test_minus_zero_ties_with_zero_and_the_smallest_id_wins():
    documents = [Document(9, b"a", 1, None, 0.0), Document(4, b"b", 1, None, -0.0), Document(2, b"c", 1, None, 1.0)]
    rows, _ = assign_clusters(documents, {}, keep_by=True, keep_order="asc")
    assert {row.cluster_id for row in rows} == {4}


def test_a_cluster_without_keep_by_values_keeps_its_smallest_id_in_either_order():
    documents = [Document(8, b"a", 3, None, None), Document(7, b"b", 3, None, None)]
    for order in ("asc", "desc"):
        rows, _ = assign_clusters(documents, {}, keep_by=True, keep_order=order)
        assert {row.cluster_id for row in rows} == {7}


def test_statuses_distances_and_skips():
    long_min = -(2**63)
    documents = [
        Document("b", b"x", long_min, None),
        Document("a", b"y", long_min + 3, None),  # 2 bits from long_min, across the sign bit
        Document("c", b"y", long_min + 3, None),  # a's text, but a is not kept
        Document("d", None, 40, None),  # given fingerprints: no exact key
        Document("e", None, 40, None),
        Document("f", b"s", None, "too_short"),
        Document("g", b"s", None, "too_short"),
        Document("h", None, None, "empty"),
        Document("i", b"z", 41, "null_fingerprint"),  # any other reason: skipped, fingerprint kept
    ]
    rows, sizes = assign_clusters(documents, {long_min: long_min, long_min + 3: long_min})
    assert [row.id for row in rows] == [doc.id for doc in documents]
    assert _by_id(rows) == {
        "a": Assigned("a", "a", long_min + 3, KEPT, None, 0),
        "b": Assigned("b", "a", long_min, NEAR_DUPLICATE, None, 2),
        "c": Assigned("c", "a", long_min + 3, EXACT_DUPLICATE, None, 0),
        "d": Assigned("d", "d", 40, KEPT, None, 0),
        "e": Assigned("e", "d", 40, NEAR_DUPLICATE, None, 0),
        "f": Assigned("f", "f", None, KEPT, "too_short", None),
        "g": Assigned("g", "f", None, EXACT_DUPLICATE, "too_short", None),
        "h": Assigned("h", None, None, SKIPPED, "empty", None),
        "i": Assigned("i", None, 41, SKIPPED, "null_fingerprint", None),
    }
    assert sorted(sizes) == [("a", 3), ("d", 2), ("f", 2)]


def test_string_ids_order_by_code_point_as_spark_orders_utf8_bytes():
    # "Z" (U+005A) < "a" (U+0061) < "é" (U+00E9) < "中" (U+4E2D), as their UTF-8 bytes order.
    documents = [Document(name, name.encode(), 7, None) for name in ("中", "é", "a", "Z")]
    rows, _ = assign_clusters(documents, {})
    assert {row.cluster_id for row in rows} == {"Z"}
