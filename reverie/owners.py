"""Which process holds something (a pending turn, a running dream), and whether it still
runs: a host, a pid and when the process began (a pid alone is reused)."""

from __future__ import annotations

import os
import socket


def process_owner() -> str:
    """Who holds something (a pending turn, a running dream): this host and process, and
    when the process began where the system says (asked each time: a fork has its own pid)."""
    pid = os.getpid()
    began = _began(pid)
    return f"{socket.gethostname()}:{pid}" + (f"/{began}" if began else "")


def _began(pid: int) -> str | None:
    """When process ``pid`` began, in clock ticks since boot (Linux's /proc), else None: a pid
    is reused (a restarted container numbers its processes from 1 again), its start is not."""
    fields = _stat(pid)
    return fields[19] if len(fields) > 19 else None


def _stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command's name (state first), or []."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rpartition(")")[2].split()
    except OSError:
        return []


def owner_alive(owner: str | None) -> bool:
    if not owner or ":" not in owner:
        return False
    host, _, process = owner.rpartition(":")
    if host != socket.gethostname():
        return True  # another machine's turn: not ours to judge
    pid, _, began = process.partition("/")
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError):
        return False
    except PermissionError:
        pass
    fields = _stat(int(pid))
    if fields[:1] in (["Z"], ["X"]):  # killed, not yet reaped by its parent: gone all the same
        return False
    # the pid is taken; by the process that opened the turn only if it began when that one did
    return not began or (fields[19] if len(fields) > 19 else None) in (None, began)
