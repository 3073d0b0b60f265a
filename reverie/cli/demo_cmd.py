"""``reverie demo``: the whole loop on a bundled conversation, offline, in seconds."""

from __future__ import annotations

import json
import tempfile
from importlib import resources
from pathlib import Path
from typing import Annotated, Optional, TypedDict

import typer
from rich.markup import escape

from reverie.cli.common import Json, app, console, emit_json, open_memory, print_block
from reverie.cli.memory_cmds import print_why


class SampleConversation(TypedDict):
    thread: str
    messages: list[dict[str, str]]  # role, content, at (ISO 8601)


class Sample(TypedDict):
    """The bundled ``data/sample_conversation.json``."""

    user: str
    conversations: list[SampleConversation]
    questions: list[str]


def load_sample() -> Sample:
    sample: Sample = json.loads(resources.files("reverie.data").joinpath("sample_conversation.json").read_text(encoding="utf-8"))
    return sample


@app.command()
def demo(
    # not REVERIE_HOME: the sample conversations must not land in the memory one works with
    home: Annotated[Optional[Path], typer.Option(
        "--home", help="Folder for the demo's memory (default: a new temporary folder; REVERIE_HOME is not used, "
                       "so the demo never writes into your own memory).", show_default=False)] = None,
    budget: Annotated[int, typer.Option(help="Token budget of each block.")] = 600,
    as_json: Json = False,
    question: Annotated[Optional[list[str]], typer.Option("--question", "-q", help="Ask your own question(s) instead.")] = None,
) -> None:
    """Ingest a sample conversation (English and Chinese, several days and threads) and show recall."""
    sample = load_sample()
    user = sample["user"]
    folder = home or Path(tempfile.mkdtemp(prefix="reverie-demo-"))
    with open_memory(folder) as mem:
        for conv in sample["conversations"]:
            mem.add(conv["messages"], user=user, thread=conv["thread"])
        learned = mem.flush(user=user)
        facts = mem.facts(user=user)
        results = [mem.recall(q, user=user, budget=budget, explain=True) for q in (question or sample["questions"])]
        if as_json:
            emit_json({"home": str(folder), "learned": learned, "facts": [f.content for f in facts],
                       "recalls": [r.as_dict() for r in results]})
            return
        console.print(f"[bold]reverie demo[/] - memory home: {folder}")
        console.print(f"Ingested {len(sample['conversations'])} conversations, learned from {learned} episodes, "
                      f"{len(facts)} facts (secrets stripped on write).")
        for f in facts:
            console.print(f"  [dim]-[/] {escape(f'[{f.category} {f.uses}x]')} {escape(f.content)}")
        for result in results:
            p = result.perception
            title = f"{escape(result.query)}  [dim](route {p.route}, {result.tokens}/{result.budget} tokens)[/]"
            print_block(title, escape(result.context) or "[dim](nothing recalled)[/]")
            print_why(result)
        console.print(f"Try: [bold]reverie recall \"...\" --user {user} --home {folder} --why[/]")
        console.print(f"Or look at it in the browser: [bold]reverie console --home {folder}[/]")
