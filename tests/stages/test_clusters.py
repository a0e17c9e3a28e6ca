"""From components to documents: statuses, kept documents and pairs by id, on hand-made frames.

Every expected row below is worked out by hand from the rules in `clusters.cluster_assignment`'s
docstring (distances are popcounts of XORs written out in the comments), not by running the
code under test.
"""

from __future__ import annotations

import contextlib

import pytest

from simhash_udf.stages import clusters
from simhash_udf.stages import documents as documents_stage

pytestmark = pytest.mark.spark

LONG_MIN = -(2**63)
DOCS_SCHEMA = "id long, exact_key binary, fingerprint long, reason string"
CLUSTERS_SCHEMA = "id long, cluster_id long, fingerprint long, status string, reason string, distance int"
KEPT, EXACT, NEAR, SKIPPED = "kept", "exact_duplicate", "near_duplicate", "skipped"

# Exact keys (binary; real ones are SHA-256 digests, any distinct bytes will do).
A, B, C, D, E, F_, G, H, I, J = (bytes([n]) * 4 for n in range(1, 11))

# Fingerprints: 0b000 = 0, 0b111 = 7, 0b111111 = 63 form one component (0-7: 3 bits, 7-63: 3 bits,
# 0-63: 6 bits, a chain); LONG_MIN and LONG_MIN + 1 (1 bit apart) another; -1 and 100 have no
# near duplicate (not in the components frame).
DOCUMENTS = [
    (10, A, 7, None),
    (3, A, 7, None),  # same text as 10
    (7, B, 0, None),
    (5, C, 63, None),
    (1, D, -1, None),  # alone
    (2, E, None, "too_short"),
    (8, E, None, "too_short"),  # same short text as 2
    (4, F_, None, "too_short"),  # a different short text: alone
    (6, None, None, "empty"),
    (9, None, None, "null_fingerprint"),
    (12, G, LONG_MIN + 1, None),
    (11, H, LONG_MIN, None),
    (15, I, 100, None),  # different texts, same fingerprint
    (14, J, 100, None),
    (17, None, 200, None),  # given fingerprints: no text, no exact key
    (16, None, 200, None),
]
COMPONENTS = [(0, 0), (7, 0), (63, 0), (LONG_MIN, LONG_MIN), (LONG_MIN + 1, LONG_MIN)]


@pytest.fixture(scope="module")
def frames(spark):
    documents = spark.createDataFrame(DOCUMENTS, DOCS_SCHEMA)
    components = spark.createDataFrame(COMPONENTS, "node long, component long")
    return documents, components


def _by_spark(documents, components, keep_order="asc"):
    return clusters.cluster_assignment(documents, components, keep_order)


def _on_driver(documents, components, keep_order="asc"):
    return clusters.assigned_on_driver(documents, components, keep_order)


# The same rules, two implementations: Spark's aggregates and joins (any size), and
# `core.cluster_rules` on the driver (a small run's).
BOTH_PATHS = pytest.mark.parametrize("assign", [_by_spark, _on_driver], ids=["spark", "driver"])


def _sorted_rows(frame):
    return sorted((tuple(r) for r in frame.collect()), key=repr)


def _assert_frame(result, expected_rows, schema: str) -> None:
    """Same column names and types as `schema` ("name type, ..."), and the same rows."""
    columns = [tuple(part.split()) for part in schema.split(", ")]
    got_columns = [(f.name, f.dataType.simpleString()) for f in result.schema.fields]
    assert got_columns == [(name, {"long": "bigint"}.get(t, t)) for name, t in columns]
    assert _sorted_rows(result) == sorted(expected_rows, key=repr)


def test_default_keeps_the_smallest_id(frames):
    documents, components = frames
    expected = [
        # {3, 5, 7, 10}: kept 3 (fingerprint 7); 10 has the same text; 7 (fp 0) and 5 (fp 63)
        # are 3 bits from 7.
        (3, 3, 7, KEPT, None, 0),
        (10, 3, 7, EXACT, None, 0),
        (7, 3, 0, NEAR, None, 3),
        (5, 3, 63, NEAR, None, 3),
        (1, 1, -1, KEPT, None, 0),
        # Short texts: a cluster only with an identical text, and no distance.
        (2, 2, None, KEPT, "too_short", None),
        (8, 2, None, EXACT, "too_short", None),
        (4, 4, None, KEPT, "too_short", None),
        (6, None, None, SKIPPED, "empty", None),
        (9, None, None, SKIPPED, "null_fingerprint", None),
        # Across the sign bit: 11 (LONG_MIN) is kept, 12 is 1 bit away.
        (11, 11, LONG_MIN, KEPT, None, 0),
        (12, 11, LONG_MIN + 1, NEAR, None, 1),
        # Equal fingerprints of different texts: near duplicates at distance 0.
        (14, 14, 100, KEPT, None, 0),
        (15, 14, 100, NEAR, None, 0),
        # No exact key at all (fingerprints given): equal fingerprints are near duplicates.
        (16, 16, 200, KEPT, None, 0),
        (17, 16, 200, NEAR, None, 0),
    ]
    distinct = documents_stage.distinct_fingerprints(documents, None)
    # From the documents; from the distinct fingerprints, their aggregate stored whole (few
    # rows) or only its aggregated part (many, or not known).
    for fingerprints, rows in ((None, None), (distinct, 8), (distinct, None)):
        stored = []
        result = clusters.cluster_assignment(
            documents, components, materialise=lambda frame: stored.append(frame) or frame,
            fingerprints=fingerprints, fingerprint_rows=rows,
        ).documents
        _assert_frame(result, expected, CLUSTERS_SCHEMA)
        assert result.count() == len(DOCUMENTS)
        assert len(stored) == 3  # the aggregate (or its aggregated part), and the larger clusters' two frames
    on_driver = clusters.assigned_on_driver(documents, components).documents
    _assert_frame(on_driver, expected, CLUSTERS_SCHEMA)


# keep_by of each document (None: the document has no value).
KEEP_BY = {10: 10, 3: 20, 5: 50, 7: 50, 1: 7, 2: None, 8: 1, 4: 3, 6: 1, 9: 1, 12: 5, 11: 5, 15: None, 14: None, 17: 2, 16: 1}


@pytest.fixture(scope="module")
def documents_with_keep_by(spark):
    rows = [(i, KEEP_BY[i], key, fp, reason) for i, key, fp, reason in DOCUMENTS]
    return spark.createDataFrame(rows, "id long, keep_by long, exact_key binary, fingerprint long, reason string")


@BOTH_PATHS
def test_keep_by_ascending(frames, documents_with_keep_by, assign):
    _, components = frames
    expected = [
        # keep_by 10, 20, 50, 50: 10 is kept (fingerprint 7); 3 has its text.
        (10, 10, 7, KEPT, None, 0),
        (3, 10, 7, EXACT, None, 0),
        (7, 10, 0, NEAR, None, 3),
        (5, 10, 63, NEAR, None, 3),
        (1, 1, -1, KEPT, None, 0),
        # 2 has no keep_by: 8 (keep_by 1) is kept.
        (8, 8, None, KEPT, "too_short", None),
        (2, 8, None, EXACT, "too_short", None),
        (4, 4, None, KEPT, "too_short", None),
        (6, None, None, SKIPPED, "empty", None),
        (9, None, None, SKIPPED, "null_fingerprint", None),
        # Tie (5, 5): the smallest id.
        (11, 11, LONG_MIN, KEPT, None, 0),
        (12, 11, LONG_MIN + 1, NEAR, None, 1),
        # Neither has keep_by: the smallest id.
        (14, 14, 100, KEPT, None, 0),
        (15, 14, 100, NEAR, None, 0),
        # keep_by 1 < 2: 16.
        (16, 16, 200, KEPT, None, 0),
        (17, 16, 200, NEAR, None, 0),
    ]
    _assert_frame(assign(documents_with_keep_by, components, "asc").documents, expected, CLUSTERS_SCHEMA)


@BOTH_PATHS
def test_keep_by_descending(frames, documents_with_keep_by, assign):
    _, components = frames
    expected = [
        # keep_by 50 for both 5 and 7: the tie goes to the smallest id, 5 (fingerprint 63).
        # 3 and 10 (fp 7): 0b111111 ^ 0b111 = 0b111000, 3 bits; 7 (fp 0): 6 bits.
        (5, 5, 63, KEPT, None, 0),
        (3, 5, 7, NEAR, None, 3),
        (10, 5, 7, NEAR, None, 3),
        (7, 5, 0, NEAR, None, 6),
        (1, 1, -1, KEPT, None, 0),
        # A missing keep_by loses in both orders: 8 is still kept.
        (8, 8, None, KEPT, "too_short", None),
        (2, 8, None, EXACT, "too_short", None),
        (4, 4, None, KEPT, "too_short", None),
        (6, None, None, SKIPPED, "empty", None),
        (9, None, None, SKIPPED, "null_fingerprint", None),
        (11, 11, LONG_MIN, KEPT, None, 0),
        (12, 11, LONG_MIN + 1, NEAR, None, 1),
        (14, 14, 100, KEPT, None, 0),
        (15, 14, 100, NEAR, None, 0),
        # keep_by 2 > 1: 17.
        (17, 17, 200, KEPT, None, 0),
        (16, 17, 200, NEAR, None, 0),
    ]
    _assert_frame(assign(documents_with_keep_by, components, "desc").documents, expected, CLUSTERS_SCHEMA)


@BOTH_PATHS
def test_string_ids_keep_their_type_and_string_order(spark, assign):
    """"a10" < "a9" < "b" as strings: the kept document is the smallest string, not number."""
    documents = spark.createDataFrame(
        [
            ("a9", A, 7, None),
            ("a10", B, 0, None),
            ("b", A, 7, None),
            ("z", None, None, "empty"),
            ("s2", C, None, "too_short"),
            ("s10", C, None, "too_short"),
        ],
        "id string, exact_key binary, fingerprint long, reason string",
    )
    components = spark.createDataFrame([(0, 0), (7, 0)], "node long, component long")
    result = assign(documents, components).documents
    expected = [
        ("a10", "a10", 0, KEPT, None, 0),
        ("a9", "a10", 7, NEAR, None, 3),
        ("b", "a10", 7, NEAR, None, 3),  # same text as a9, but not as the kept a10
        ("z", None, None, SKIPPED, "empty", None),
        ("s10", "s10", None, KEPT, "too_short", None),
        ("s2", "s10", None, EXACT, "too_short", None),
    ]
    _assert_frame(
        result,
        expected,
        "id string, cluster_id string, fingerprint long, status string, reason string, distance int",
    )


@BOTH_PATHS
def test_int_ids_keep_their_type(spark, assign):
    documents = spark.createDataFrame(
        [(2, A, 7, None), (1, B, 0, None), (3, None, None, "empty")],
        "id int, exact_key binary, fingerprint long, reason string",
    )
    components = spark.createDataFrame([(0, 0), (7, 0)], "node long, component long")
    expected = [(1, 1, 0, KEPT, None, 0), (2, 1, 7, NEAR, None, 3), (3, None, None, SKIPPED, "empty", None)]
    _assert_frame(
        assign(documents, components).documents,
        expected,
        "id int, cluster_id int, fingerprint long, status string, reason string, distance int",
    )


def test_pairs_by_id_names_each_fingerprint_by_its_smallest_id(spark):
    documents = spark.createDataFrame(
        [
            (10, 7),
            (3, 7),  # fingerprint 7 is named 3
            (7, 0),
            (5, 63),
            (12, LONG_MIN),  # the smaller fingerprint carries the larger id
            (11, LONG_MIN + 1),
            (0, None),  # no fingerprint: never names anything
            (20, 1000),  # in no pair
        ],
        "id long, fingerprint long",
    )
    pairs = spark.createDataFrame(
        [(0, 7, 3), (7, 63, 3), (0, 63, 6), (LONG_MIN, LONG_MIN + 1, 1)],
        "fp_a long, fp_b long, distance int",
    )
    expected = [(3, 7, 3), (3, 5, 3), (5, 7, 6), (11, 12, 1)]
    _assert_frame(clusters.pairs_by_id(pairs, documents_stage.distinct_fingerprints(documents, None)), expected, "id_a long, id_b long, distance int")


def test_pairs_by_id_with_string_ids(spark):
    documents = spark.createDataFrame(
        [("a9", 7), ("b", 7), ("a10", 0), ("c", -1)],
        "id string, fingerprint long",
    )
    pairs = spark.createDataFrame([(0, 7, 3), (-1, 0, 64)], "fp_a long, fp_b long, distance int")
    # fingerprint 7 is named "a9" ("a9" < "b"); "a10" < "a9"; "a10" < "c".
    expected = [("a10", "a9", 3), ("a10", "c", 64)]
    _assert_frame(clusters.pairs_by_id(pairs, documents_stage.distinct_fingerprints(documents, None)), expected, "id_a string, id_b string, distance int")


def _physical_plan(frame) -> str:
    return frame._jdf.queryExecution().executedPlan().toString()


def test_kept_document_is_chosen_without_a_window_over_a_cluster(frames, documents_with_keep_by):
    """A window over each cluster holds the whole cluster in one task (a crawl's largest
    cluster can hold millions of pages); the kept document must come from aggregates that
    Spark combines partially before the shuffle, with every keep order."""
    documents, components = frames
    for frame in (
        clusters.cluster_assignment(documents, components).documents,
        clusters.cluster_assignment(
            documents, components, fingerprints=documents_stage.distinct_fingerprints(documents, None)
        ).documents,
        clusters.cluster_assignment(documents_with_keep_by, components, "asc").documents,
        clusters.cluster_assignment(documents_with_keep_by, components, "desc").documents,
    ):
        plan = _physical_plan(frame)
        assert "Window" not in plan, plan
        assert "HashAggregate" in plan or "ObjectHashAggregate" in plan or "SortAggregate" in plan, plan


# Slow (11 s on 2 cores): a cluster of 20,000 documents. The fast lane keeps
# test_default_keeps_the_smallest_id for the clusters' rules.
@pytest.mark.slow
def test_a_large_cluster_keeps_its_smallest_id_and_counts_every_document(spark):
    """20,000 documents of one component over 8 partitions, ids shuffled: one kept (the
    smallest id), the exact copies of its text exact duplicates, the rest near duplicates."""
    import random

    rng = random.Random(3)
    ids = list(range(20_000))
    rng.shuffle(ids)
    # Fingerprints 0..99 form one component; the text of a document is id % 7.
    rows = [(i, bytes([i % 7]) * 4, i % 100, None) for i in ids]
    documents = spark.createDataFrame(rows, DOCS_SCHEMA).repartition(8)
    components = spark.createDataFrame([(fp, 0) for fp in range(100)], "node long, component long")
    for fingerprints in (None, documents_stage.distinct_fingerprints(documents, None)):
        assignment = clusters.cluster_assignment(documents, components, fingerprints=fingerprints)
        result = {r["id"]: r for r in assignment.documents.collect()}
        assert len(result) == 20_000
        assert {r["cluster_id"] for r in result.values()} == {0}
        statuses = {i: r["status"] for i, r in result.items()}
        assert statuses[0] == KEPT
        for i in range(1, 20_000):
            assert statuses[i] == (EXACT if i % 7 == 0 else NEAR), i
            assert result[i]["distance"] == bin(i % 100).count("1")


# Slow (38 s on 2 cores, the fast lane's slowest test before it was marked): eight assignments,
# three of them of 20,000 documents.
@pytest.mark.slow
def test_cluster_sizes_are_the_documents_counted_per_cluster(frames, documents_with_keep_by, spark):
    """The report's size histogram reads `ClusterAssignment.sizes` (the aggregate the kept
    documents come from) instead of counting clusters/ by cluster: they must agree, cluster by
    cluster, in every keep order and on a cluster of 20,000 documents."""
    documents, components = frames
    big = spark.createDataFrame(
        [(i, bytes([i % 7]) * 4, i % 100, None) for i in range(20_000)], DOCS_SCHEMA
    ).repartition(8)
    big_components = spark.createDataFrame([(fp, 0) for fp in range(100)], "node long, component long")
    for assignment in (
        clusters.cluster_assignment(documents, components),
        clusters.cluster_assignment(documents_with_keep_by, components, "asc"),
        clusters.cluster_assignment(documents_with_keep_by, components, "desc"),
        clusters.cluster_assignment(big, big_components),
        clusters.cluster_assignment(documents, components, fingerprints=documents_stage.distinct_fingerprints(documents, None)),
        clusters.cluster_assignment(big, big_components, fingerprints=documents_stage.distinct_fingerprints(big, None)),
        clusters.assigned_on_driver(documents_with_keep_by, components, "desc"),
        clusters.assigned_on_driver(big, big_components),
    ):
        counted = {
            r["cluster_id"]: r["count"]
            for r in assignment.documents.where("cluster_id is not null").groupBy("cluster_id").count().collect()
        }
        sizes = {r["cluster_id"]: r["members"] for r in assignment.sizes.collect()}
        assert sizes == counted
        assert len(counted) > 1 or set(counted.values()) == {20_000}


@contextlib.contextmanager
def _no_automatic_broadcast(spark):
    """Spark broadcasts no join side by its own size estimate (tiny test frames would always
    be): only an explicit hint broadcasts, as for a crawl's frames, whose estimates are large."""
    before = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        yield
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", before)


def test_only_a_known_count_up_to_the_limit_is_few_enough_to_broadcast():
    assert clusters.few_enough_to_broadcast(0)
    assert clusters.few_enough_to_broadcast(clusters.BROADCAST_ROWS)
    assert not clusters.few_enough_to_broadcast(clusters.BROADCAST_ROWS + 1)
    assert not clusters.few_enough_to_broadcast(None)


@pytest.mark.parametrize("broadcast_pairs", [True, False])
def test_pairs_by_id_with_the_pairs_broadcast_names_them_without_a_shuffle(spark, broadcast_pairs):
    """With broadcast_pairs the pairs are broadcast and the names (every distinct fingerprint)
    are never shuffled by a join; the ids are the same whichever join names them."""
    documents = spark.createDataFrame([(10, 7), (3, 7), (7, 0), (5, 63), (20, 1000)], "id long, fingerprint long")
    pairs = spark.createDataFrame([(0, 7, 3), (7, 63, 3), (0, 63, 6)], "fp_a long, fp_b long, distance int")
    with _no_automatic_broadcast(spark):
        named = clusters.pairs_by_id(pairs, documents_stage.distinct_fingerprints(documents, None), broadcast_pairs)
        # Fingerprint 7 is named 3 (its smallest id), 0 is 7, 63 is 5.
        _assert_frame(named, [(3, 7, 3), (3, 5, 3), (5, 7, 6)], "id_a long, id_b long, distance int")
        plan = _physical_plan(named)
    # Both joins broadcast (the plan lists the initial and the final plan).
    assert ("SortMergeJoin" not in plan and "BroadcastHashJoin" in plan) if broadcast_pairs else "BroadcastHashJoin" not in plan, plan


@pytest.mark.parametrize("dropped_rows", [2, None])
@pytest.mark.parametrize("id_type", ["long", "string"])
def test_without_dropped_keeps_every_other_document_and_broadcasts_few_dropped_ids(spark, dropped_rows, id_type):
    """deduped/ is the documents whose id was not dropped, whatever the join: the dropped ids
    are broadcast (the documents streamed, not shuffled) when their count is known and few."""
    cast = int if id_type == "long" else str
    documents = spark.createDataFrame([(cast(i), f"text {i}") for i in range(1, 9)], f"doc {id_type}, text string")
    dropped = spark.createDataFrame([(cast(3),), (cast(8),)], f"doc {id_type}")
    with _no_automatic_broadcast(spark):
        deduped = clusters.without_dropped(documents, dropped, "doc", dropped_rows)
        kept = sorted(tuple(r) for r in deduped.collect())
        plan = _physical_plan(deduped)
    assert kept == sorted((cast(i), f"text {i}") for i in (1, 2, 4, 5, 6, 7))
    assert ("BroadcastHashJoin" in plan and "SortMergeJoin" not in plan) if dropped_rows else "SortMergeJoin" in plan, plan


def _random_documents(rng, n: int, string_ids: bool) -> tuple[list[tuple], list[tuple]]:
    """`n` documents (`id`, `keep_by` double, `exact_key`, `fingerprint`, `reason`) drawn from
    small pools, so that fingerprints, texts and keep_by values repeat, and a components
    frame over some of the fingerprints."""
    fingerprints = [LONG_MIN, LONG_MIN + 1, -1, 0, 1, 2**63 - 1] + [rng.randrange(-(2**63), 2**63) for _ in range(24)]
    keys = [bytes([k]) * 4 for k in range(12)] + [None]
    keep_by = [None, float("nan"), 0.0, -0.0, 1.5, -2.0, 7.0]
    reasons = [None] * 6 + ["too_short", "too_short", "empty", "null_fingerprint"]
    ids = rng.sample(range(10 * n), n)
    documents = []
    for i in ids:
        reason = rng.choice(reasons)
        fingerprint = None if reason == "too_short" or rng.random() < 0.1 else rng.choice(fingerprints)
        documents.append((f"d{i}" if string_ids else i, rng.choice(keep_by), rng.choice(keys), fingerprint, reason))
    linked = rng.sample(fingerprints, 18)
    components = []
    for start in range(0, len(linked), 3):  # components of 1 to 3 of the fingerprints
        group = linked[start:start + rng.randint(1, 3)]
        components += [(fp, min(group)) for fp in group]
    return documents, components


# Slow (30-50 s a seed on 2 cores: each Spark assignment and its sizes are ~20 Spark jobs).
# The fast lane checks both paths on the hand-worked frames above, and a whole run on each
# (tests/run/test_end_to_end.py).
@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_the_driver_assigns_the_clusters_spark_assigns(spark, seed):
    """On random documents (repeated fingerprints, texts and keep_by values, NaN and -0.0,
    null everything, every reason), `assigned_on_driver` returns the rows and sizes of
    `cluster_assignment`, in both keep orders and without keep_by; string ids for even seeds,
    integers for odd ones."""
    import random

    rng = random.Random(seed)
    for string_ids in (seed % 2 == 0,):
        rows, edges = _random_documents(rng, 400, string_ids)
        id_type = "string" if string_ids else "long"
        with_keep_by = spark.createDataFrame(
            rows, f"id {id_type}, keep_by double, exact_key binary, fingerprint long, reason string"
        ).repartition(3)
        without = with_keep_by.drop("keep_by")
        components = spark.createDataFrame(edges, "node long, component long")
        for documents, order in ((without, "asc"), (with_keep_by, "asc"), (with_keep_by, "desc")):
            spark_path = clusters.cluster_assignment(documents, components, order)
            driver_path = clusters.assigned_on_driver(documents, components, order)
            # Names and types (nullability is Spark's guess for each plan; Parquet keeps none).
            assert driver_path.documents.schema.simpleString() == spark_path.documents.schema.simpleString()
            assert _sorted_rows(driver_path.documents) == _sorted_rows(spark_path.documents)
            assert _sorted_rows(driver_path.sizes) == _sorted_rows(spark_path.sizes)


def test_only_few_documents_with_a_keep_by_python_orders_as_spark_are_assigned_on_driver(spark):
    plain = spark.createDataFrame([(1, None, 5, None)], DOCS_SCHEMA)
    assert clusters.assigned_on_driver_when(plain, 0)
    assert clusters.assigned_on_driver_when(plain, clusters.DRIVER_MAX_DOCUMENTS)
    assert not clusters.assigned_on_driver_when(plain, clusters.DRIVER_MAX_DOCUMENTS + 1)
    assert not clusters.assigned_on_driver_when(plain, None)
    for keep_by_type, expected in (("timestamp", True), ("double", True), ("string", True), ("array<int>", False)):
        frame = spark.createDataFrame([], f"id long, keep_by {keep_by_type}, exact_key binary, fingerprint long, reason string")
        assert clusters.assigned_on_driver_when(frame, 1) is expected, keep_by_type
