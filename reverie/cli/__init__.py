"""The ``reverie`` command: a thin typer layer over :class:`reverie.Memory`.

Every command works on ``--home`` (or ``$REVERIE_HOME``) and, where it is about
one person, ``--user``. ``--json`` prints machine-readable output; people get
rich tables. Each command group lives in its own module and registers itself on
the one ``app`` of :mod:`reverie.cli.common`.
"""

from reverie.cli import bench_cmds, console_cmd, demo_cmd, dream_cmds, memory_cmds, migrate_cmd, server_cmds
from reverie.cli.common import app, main

__all__ = [
    "app", "bench_cmds", "console_cmd", "demo_cmd", "dream_cmds", "main", "memory_cmds", "migrate_cmd", "server_cmds",
]
