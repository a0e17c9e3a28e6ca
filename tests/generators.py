"""Inputs shared by several test modules, made from a seed (never read from the code under test).

- `near_centre`: fingerprints 1..3 bits from a random centre, every flip in the low 32 bits,
  so all share the high 32 bits: one hot run in the tables of a 4-block plan that keep the
  high blocks.
- `PARAGRAPH`: an English paragraph long enough to be fingerprinted under every default.
"""

from __future__ import annotations

import numpy as np

PARAGRAPH = (
    "Harbour officials said on Tuesday that the new container terminal will open next spring, "
    "after two years of dredging, a dispute over the contract for the cranes and a long "
    "argument about who pays for the rail link to the inland depot. Shipping lines welcomed "
    "the news but warned that fees must stay competitive with the ports further up the coast."
)


def near_centre(seed: int, size: int) -> tuple[int, set[int]]:
    """(centre, members): `size` distinct unsigned 64-bit values, the centre among them, each
    other one 1..3 bits from the centre, with every flipped bit among the low 32."""
    rng = np.random.default_rng(seed)
    centre = int(rng.integers(0, 2**64, dtype=np.uint64, endpoint=False))
    members = {centre}
    while len(members) < size:
        value = centre
        for bit in rng.choice(32, int(rng.integers(1, 4)), replace=False):
            value ^= 1 << int(bit)
        members.add(value)
    return centre, members
