"""Benchmarks measure in a child process that does nothing else: its own peak memory, and
no state left over from the benchmark that spawned it."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import reverie


def peak_rss_bytes() -> int:
    """This process's peak resident memory: ``VmHWM`` on Linux (``ru_maxrss`` there keeps the
    peak of the process this one was spawned from), else ``ru_maxrss``."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def run_child(code: str, job: dict[str, Any], *, what: str) -> dict[str, Any]:
    """Run ``code`` (which reads ``job`` as JSON on stdin and prints one JSON object) with
    this checkout of reverie first on its path; its answer, or RuntimeError naming ``what``."""
    env = dict(os.environ)
    root = str(Path(reverie.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-c", code], input=json.dumps(job), capture_output=True, text=True,
                          env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the {what} process failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result
