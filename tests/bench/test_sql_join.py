"""bench/sql_join.py: the earlier SQL band join, the benchmarks' reference, against brute force.

Planted groups of near duplicates (`generators.planted_rows`) plus values on both sides of the
sign bit; the expected pairs come from `generators.brute_force_pairs` (every pair compared),
never from a band plan.
"""

from __future__ import annotations

import pytest
from generators import brute_force_pairs, planted_rows, to_signed

from bench.sql_join import sql_near_duplicate_pairs
from simhash_udf.core import bands

pytestmark = pytest.mark.spark


def _fingerprints() -> list[int]:
    """Distinct signed fingerprints: planted groups, random singletons, and 0, -1, the signed
    extremes and their one-bit neighbours (pairs across the sign bit)."""
    values = {fp for _, fp in planted_rows(seed=11, groups=150, singletons=600)}
    for edge in (0, (1 << 64) - 1, 1 << 63, (1 << 63) - 1):
        values.add(to_signed(edge))
        values.update(to_signed(edge ^ (1 << bit)) for bit in (0, 1, 31, 32, 62, 63))
    return sorted(values)


@pytest.mark.parametrize(("k", "blocks"), [(0, None), (1, None), (3, 5), (3, None)])
def test_sql_join_equals_brute_force(spark, k, blocks):
    values = _fingerprints()
    frame = spark.createDataFrame([(v,) for v in values], "fingerprint long")
    plan = bands.choose_plan(len(values), k, blocks)
    got = [(r.fp_a, r.fp_b, r.distance) for r in sql_near_duplicate_pairs(frame, plan).collect()]
    expected = brute_force_pairs([(v, v) for v in values], k)  # each value named by itself
    assert len(got) == len(set(got))  # each pair once
    assert set(got) == expected
    if k >= 3:
        assert len(expected) > 200 and any(a < 0 <= b for a, b, _ in expected)  # not degenerate
