"""Leases: runs and `compact` of one index exclude each other.

A run holds a *lease* (`leases/run-*.json`, its mtime refreshed every 30 s by a thread) from
`IndexSession.open` to its commit or abort, and `compact` holds `leases/compact.json` (created
only if absent): each refuses to start while the other's lease is live (IndexBusyError), so
compact never deletes a segment a run is about to publish. A killed holder's lease goes stale
(its process is gone on this host, or it was not refreshed for 10 minutes) and is ignored,
then removed by the next compact. The files are `index/store.IndexStore`'s.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from typing import Any

from simhash_udf.files import outputs
from simhash_udf.index.manifest import now_iso
from simhash_udf.index.store import IndexStore, safe_name

LEASES = "leases"
COMPACT_LEASE = f"{LEASES}/compact.json"
# A lease's holder touches it this often; one not touched for LEASE_TTL_SECONDS is stale (its
# holder was killed on another machine). The TTL also absorbs clock skew between machines.
LEASE_HEARTBEAT_SECONDS = 30.0
LEASE_TTL_SECONDS = 600.0

log = logging.getLogger("simhash_udf")


class IndexBusyError(outputs.OutputError):
    """A run and `compact` would overlap: the one that came second is refused (exit code 2)."""


def take_run_lease(store: IndexStore, run_id: str) -> Lease:
    """A lease held by a run from its open to its commit or abort. Raises IndexBusyError
    (nothing kept) while `compact` holds a live lease on the index."""
    lease = Lease.start(store, f"{LEASES}/run-{safe_name(run_id)}-{uuid.uuid4().hex[:8]}.json", run_id)
    # Written first, checked second (compact does the reverse): of a run and a compact
    # starting together, at least one sees the other.
    holder = live_lease(store, COMPACT_LEASE)
    if holder is not None:
        lease.release()
        raise IndexBusyError(
            f"`compact` is running on the index {store.root} ({_holder_text(holder)}); this run "
            "did nothing: run it again once compact is done"
        )
    return lease


def take_compact_lease(store: IndexStore) -> Lease:
    """The compact lease, created only if absent (a stale one is replaced). Raises
    IndexBusyError, holding nothing, while another compact or any run holds a live lease."""
    for _ in range(2):
        lease = Lease.start(store, COMPACT_LEASE, "compact", exclusive=True)
        if lease is not None:
            break
        holder = live_lease(store, COMPACT_LEASE)
        if holder is not None:
            raise IndexBusyError(
                f"another `compact` is running on the index {store.root} ({_holder_text(holder)})"
            )
        log.warning("index %s: removing the stale compact lease of a killed compact", store.root)
        store.delete(COMPACT_LEASE)
    else:
        raise IndexBusyError(f"could not take the compact lease of the index {store.root}; try again")
    runs, stale = [], []
    for relative in lease_files(store):
        holder = live_lease(store, relative)
        (runs if holder is not None else stale).append(holder or relative)
    if runs:
        lease.release()
        names = ", ".join(f"{h.get('name')!r} ({_holder_text(h)})" for h in runs)
        raise IndexBusyError(
            f"{len(runs)} run(s) are going on the index {store.root}: {names}; compact did "
            "nothing: run it when no run is going"
        )
    for relative in stale:  # leases of killed runs
        store.delete(relative)
        store.drop_checksum(relative)
    return lease


def lease_files(store: IndexStore) -> list[str]:
    """Every run lease file (relative), live or stale."""
    folder = store.fs_path(LEASES)
    if not store.fs.exists(folder):
        return []
    return sorted(
        f"{LEASES}/{s.getPath().getName()}"
        for s in store.fs.listStatus(folder)
        if s.getPath().getName().startswith("run-") and s.getPath().getName().endswith(".json")
    )


def live_lease(store: IndexStore, relative: str) -> dict[str, Any] | None:
    """The lease's holder (kind, name, host, pid, started_at, age) when it is live: on this
    host, its process is running and it was refreshed within LEASE_TTL_SECONDS; on another,
    it was refreshed within LEASE_TTL_SECONDS. None when absent or stale."""
    path = store.fs_path(relative)
    try:
        status = store.fs.getFileStatus(path)
        holder = json.loads(store.read_text(relative))
    except Exception:  # gone meanwhile (released), or half-written: judged by age alone
        if not store.fs.exists(path):
            return None
        holder = {}
        status = store.fs.getFileStatus(path)
    holder["age"] = time.time() - status.getModificationTime() / 1000
    if holder["age"] > LEASE_TTL_SECONDS:
        return None
    if holder.get("host") == socket.gethostname() and not _process_alive(holder.get("pid")):
        return None
    return holder


def _touch(store: IndexStore, relative: str) -> None:
    store.fs.setTimes(store.fs_path(relative), int(time.time() * 1000), -1)


class Lease:
    """A lease file of the index, refreshed by a daemon thread until `release`."""

    def __init__(self, store: IndexStore, relative: str) -> None:
        self.store = store
        self.relative = relative
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"index-lease {relative}", daemon=True)

    @staticmethod
    def start(store: IndexStore, relative: str, name: str, exclusive: bool = False) -> Lease | None:
        """Create the lease file (holder: kind, name, host, pid, started_at) and start its
        heartbeat; with `exclusive`, None when the file already exists."""
        body = json.dumps({
            "kind": "compact" if relative == COMPACT_LEASE else "run", "name": name,
            "host": socket.gethostname(), "pid": os.getpid(), "started_at": now_iso(),
        })
        if exclusive:
            tmp = f"{LEASES}/_tmp-{uuid.uuid4().hex}.json"
            store.write_file(tmp, body)
            try:
                if not store.exclusive_rename(tmp, relative):
                    return None
            finally:
                store.delete(tmp)
                store.drop_checksum(tmp)
        else:
            store.write_file(relative, body)
        lease = Lease(store, relative)
        lease._thread.start()
        return lease

    def _beat(self) -> None:
        while not self._stop.wait(LEASE_HEARTBEAT_SECONDS):
            try:
                _touch(self.store, self.relative)
            except Exception as error:  # a failed beat is retried; a lost lease ages out
                log.warning("index lease %s not refreshed: %s", self.relative, error)

    def release(self) -> None:
        """Stop refreshing and delete the lease file (idempotent)."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(timeout=LEASE_HEARTBEAT_SECONDS)
        self.store.delete(self.relative)
        self.store.drop_checksum(self.relative)


def _holder_text(holder: dict[str, Any]) -> str:
    return (
        f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}, since {holder.get('started_at', '?')}, "
        f"refreshed {holder.get('age', 0):.0f} s ago"
    )


def _process_alive(pid: Any) -> bool:
    if not isinstance(pid, int):
        return True  # unknown: judged by the lease's age alone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
