"""``reverie bench``: benchmarks of the recall line, each beside a plain BM25 baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from reverie.bench import BUDGETS, LocomoReport, load_locomo, run_locomo
from reverie.bench.inputs import SIZES, run_input_sizes
from reverie.cli.common import (
    Engine,
    Json,
    app,
    console,
    emit_json,
    err_console,
    fail_cleanly,
)

bench_app = typer.Typer(help="Benchmarks: how much of what a question needs recall delivers.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")


@bench_app.command("locomo")
def locomo(
    directory: Annotated[Path, typer.Argument(help="Folder of LoCoMo conversations, one *.json each.", exists=True, file_okay=False)],
    budget: Annotated[
        Optional[list[str]],
        typer.Option("--budget", help="Token budget(s) to report; repeat or comma-separate. Default 200,500,1000,2000."),
    ] = None,
    limit_questions: Annotated[
        Optional[int], typer.Option("--limit-questions", min=1, help="Ask only the first N questions of each conversation.")
    ] = None,
    engine: Engine = None,
    group: Annotated[str, typer.Option(help="How turns become episodes: exchange or message.")] = "exchange",
    as_json: Json = False,
) -> None:
    """Evidence recall at token budgets and at k, latency and ingest speed, reverie beside BM25."""

    budgets = _budgets(budget) or list(BUDGETS)
    with fail_cleanly():
        cases = load_locomo(directory, limit_questions=limit_questions)
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=err_console, transient=True) as progress:
            task = progress.add_task("locomo", total=sum(c.steps for c in cases))
            report = run_locomo(
                cases, budgets=budgets, engine=engine, group=group,
                on_step=lambda label: progress.update(task, advance=1, description=label),
            )
    if as_json:
        emit_json(report.as_dict())
    else:
        _print_report(report)


@bench_app.command("inputs")
def inputs(
    size: Annotated[
        Optional[list[int]], typer.Option("--size", min=1, help="Message size(s) in characters; repeat. Default 1000, 100000, 1000000."),
    ] = None,
    repeat: Annotated[int, typer.Option(min=1, help="Runs per size; the median is reported.")] = 3,
    as_json: Json = False,
) -> None:
    """Recall and turn time for very long messages: the recall path is linear in the message."""

    with fail_cleanly():
        rows = run_input_sizes(size or list(SIZES), repeat=repeat)
    if as_json:
        emit_json(rows)
        return
    table = Table(title="Recall and turn time by message size (median ms)")
    for col in ("characters", "recall ms", "turn ms"):
        table.add_column(col, justify="right")
    for row in rows:
        table.add_row(f"{row['chars']:,}", f"{row['recall_ms']:.1f}", f"{row['turn_ms']:.1f}")
    console.print(table)


def _budgets(values: list[str] | None) -> list[int]:
    out = []
    for value in values or []:
        for part in value.split(","):
            if not part.strip().isdigit() or int(part) <= 0:
                raise typer.BadParameter(f"{part.strip()!r} is not a positive token count", param_hint="--budget")
            out.append(int(part))
    return sorted(set(out))


def _print_report(report: LocomoReport) -> None:
    ours, base = report.reverie, report.bm25
    table = Table(
        title=f"LoCoMo: {ours.questions} questions (categories 1-4), {report.conversations} conversations, {report.turns} turns",
    )
    for col in ("", "reverie", "BM25", "ratio"):
        table.add_column(col, justify="right" if col else "left")
    rows = [(f"recall @ {b} tokens", r, base.recall_at_budget[b], "{:.3f}") for b, r in ours.recall_at_budget.items()]
    rows += [(f"held @ {b} tokens", r, base.held_at_budget[b], "{:.3f}") for b, r in ours.held_at_budget.items()]
    rows += [(f"recall@{k}", r, base.recall_at_k[k], "{:.3f}") for k, r in ours.recall_at_k.items()]
    rows += [
        ("latency p50 (ms)", ours.latency_p50_ms, base.latency_p50_ms, "{:.2f}"),
        ("latency p95 (ms)", ours.latency_p95_ms, base.latency_p95_ms, "{:.2f}"),
        ("ingest turns/s", ours.ingest_turns_per_s, base.ingest_turns_per_s, "{:,.0f}"),
    ]
    for name, a, b, fmt in rows:
        table.add_row(name, fmt.format(a), fmt.format(b), f"{a / b:.2f}x" if b else "-")
    console.print(table)
    notes = (
        "recall: mean over questions of the share of their evidence turns delivered",
        "  (a turn counts when a delivered item's provenance includes it: the issue's rule)",
        "held: the stricter reading - only turns whose words the delivered lines show",
        "recall@k: the first k episodes, facts and notes delivered at 2000 tokens",
        "recalls are read-only (track=False): the store does not change between questions",
        "ingest: reverie = add + learn (flush); BM25 = building its index",
        f"{report.without_evidence} questions without evidence ids skipped; run took {report.seconds:.1f} s",
    )
    for note in notes:
        console.print(note, style="dim", soft_wrap=True)
