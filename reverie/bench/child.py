"""Benchmarks measure in a child process that does nothing else: its own peak memory, and
no state left over from the benchmark that spawned it."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

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
    return finish_child(start_child(code, job), what=what)


@dataclass
class Child:
    """A child process :func:`start_child` started, and the file its stderr goes to."""

    process: "subprocess.Popen[str]"
    stderr: IO[str]

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        self.stderr.close()


def start_child(code: str, job: dict[str, Any]) -> Child:
    """:func:`run_child` started, not waited for: :func:`finish_child` takes its answer. The
    job and the child's stderr go through temporary files, so no pipe fills while it runs."""
    env = dict(os.environ)
    root = str(Path(reverie.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    stderr = tempfile.TemporaryFile("w+", encoding="utf-8")
    with tempfile.TemporaryFile("w+", encoding="utf-8") as stdin:
        json.dump(job, stdin)
        stdin.seek(0)
        process = subprocess.Popen([sys.executable, "-c", code], stdin=stdin, stdout=subprocess.PIPE, stderr=stderr,
                                   text=True, env=env)
    return Child(process, stderr)


def finish_child(child: Child, *, what: str) -> dict[str, Any]:
    """The answer of a child :func:`start_child` started, or RuntimeError naming ``what``."""
    out, _ = child.process.communicate()
    child.stderr.seek(0)
    err = child.stderr.read()
    child.stderr.close()
    if child.process.returncode != 0:
        raise RuntimeError(f"the {what} process failed ({child.process.returncode}): {err.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(out)
    return result
