"""``python -m reverie.cli``: the same command as the ``reverie`` script."""

from reverie.cli import app

app(prog_name="reverie")
