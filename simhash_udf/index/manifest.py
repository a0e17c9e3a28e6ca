"""One version of an index: the manifest file (`manifests/<version>.json`) and what it lists.

A manifest names the band plan and fingerprint settings fixed at the index's creation, the runs
in the order they were published (`RunInfo`), and the segments that make up the version
(`Segment`, each with the size of every data file, so a truncated file is found by a listing
before any Spark work). Reading, writing and publishing manifests is `index/store.py`'s.
Pure Python (the plan is `core/bands.BandPlan`).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from simhash_udf.core import bands

FORMAT_VERSION = 1


@dataclass(frozen=True)
class RunInfo:
    """One published run: its id, publication order and what it added."""

    run_id: str
    seq: int
    segment: str
    input_digest: str
    base_version: int
    published_at: str
    entries: int
    keys: int


@dataclass(frozen=True)
class Segment:
    """A data folder of the index: `folder` relative to the index root, the runs whose
    entries it holds, and the size of each of its data files (relative paths)."""

    folder: str
    runs: tuple[str, ...]
    files: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest:
    """One version of the index."""

    version: int
    k: int
    blocks: int
    fingerprint: dict[str, Any]
    id_type: str
    runs: tuple[RunInfo, ...] = ()
    segments: tuple[Segment, ...] = ()
    next_seq: int = 1
    created_at: str = ""

    @property
    def plan(self) -> bands.BandPlan:
        return bands.BandPlan(self.k, self.blocks)

    def run(self, run_id: str) -> RunInfo | None:
        return next((r for r in self.runs if r.run_id == run_id), None)

    def to_json(self) -> str:
        body = asdict(self)
        body["format"] = FORMAT_VERSION
        return json.dumps(body, indent=1, sort_keys=True) + "\n"

    @staticmethod
    def from_json(text: str) -> Manifest:
        body = json.loads(text)
        if body.get("format") != FORMAT_VERSION:
            raise ValueError(f"unknown index format {body.get('format')!r}")
        return Manifest(
            version=body["version"],
            k=body["k"],
            blocks=body["blocks"],
            fingerprint=body["fingerprint"],
            id_type=body["id_type"],
            runs=tuple(RunInfo(**r) for r in body["runs"]),
            segments=tuple(
                Segment(s["folder"], tuple(s["runs"]), dict(s["files"])) for s in body["segments"]
            ),
            next_seq=body["next_seq"],
            created_at=body.get("created_at", ""),
        )

    def without_run(self, run_id: str) -> Manifest:
        """This manifest with a run's own segment dropped (the run must have one of its own)."""
        return replace(
            self,
            runs=tuple(r for r in self.runs if r.run_id != run_id),
            segments=tuple(s for s in self.segments if s.runs != (run_id,)),
        )


def now_iso() -> str:
    """The current UTC time to the second (ISO 8601), as manifests and leases record it."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
