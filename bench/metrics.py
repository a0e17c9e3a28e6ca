"""Rank statistics the quality benchmarks score distances with (pure numpy and pandas)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def auc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """P(a positive pair is closer than a negative one), ties counting one half.

    Distances (smaller = more similar), any real values; NaN when either side is empty.
    Computed from average ranks (the Mann-Whitney U of the negatives), O(n log n); the
    numerator is a sum of halves, so the figure is exact.
    """
    pos, neg = np.asarray(positive, dtype=float), np.asarray(negative, dtype=float)
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    ranks = pd.Series(np.concatenate([pos, neg])).rank(method="average").to_numpy()
    u_neg = ranks[len(pos):].sum() - len(neg) * (len(neg) + 1) / 2
    return float(u_neg / (len(pos) * len(neg)))


def spearman(x: pd.Series, y: pd.Series) -> float:
    """Spearman rank correlation (average ranks for ties); NaN under three values."""
    if len(x) < 3:
        return float("nan")
    return float(np.corrcoef(x.rank().to_numpy(), y.rank().to_numpy())[0, 1])
