"""What a benchmark ran on, for the headers of its results: the machine (CPU, cores, memory,
OS, load), the versions of the packages its figures depend on, and the commit measured.

The one place bench/ collects these: every script that writes a document takes them from here.
"""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else the platform's guess."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def memory_bytes() -> int:
    """Physical memory in bytes (the kernel's MemTotal on Linux); 0 when unknown."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def memory_gb() -> float:
    """Physical memory in GB (10^9 bytes); 0 when unknown."""
    return memory_bytes() / 1e9


def machine_line() -> str:
    """`host: CPU, N cores, M GB RAM, OS release`: the machine in one line."""
    return (
        f"{platform.node()}: {cpu_model()}, {os.cpu_count()} cores, {memory_gb():.0f} GB RAM, "
        f"{platform.system()} {platform.release()}"
    )


def package_version(name: str) -> str | None:
    """The installed version of a distribution, or None when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def package_versions(names: Iterable[str], missing: str | None = "(not installed)") -> str:
    """`name version, ...` for the named distributions. A package that is not installed shows
    as `name <missing>`, or is left out when missing is None."""
    found = []
    for name in names:
        version = package_version(name)
        if version is not None:
            found.append(f"{name} {version}")
        elif missing is not None:
            found.append(f"{name} {missing}")
    return ", ".join(found)


def _git(*args: str) -> str:
    """A git command's stdout in the repository, stripped; empty when git fails."""
    done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def git_commit() -> str:
    """The repository's short HEAD commit, or `unknown` outside a git checkout."""
    return _git("rev-parse", "--short", "HEAD") or "unknown"


def library_version() -> str:
    """The commit the library was measured at, and whether simhash_udf/ had uncommitted
    changes (then the figures belong to the working tree, not the commit)."""
    commit = _git("rev-parse", "--short", "HEAD")
    if not commit:
        return "unknown (not a git checkout)"
    dirty = _git("status", "--porcelain", "--", "simhash_udf")
    state = " with uncommitted changes in simhash_udf/" if dirty else " (clean)"
    return f"simhash_udf at commit {commit}{state}"


def load_average() -> tuple[float, float, float]:
    """The 1, 5 and 15-minute load averages: how much else ran on the (shared) machine."""
    return os.getloadavg()
