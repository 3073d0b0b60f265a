"""``reverie bench``: benchmarks of the recall line, each beside a plain BM25 baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from reverie.bench import BUDGETS, LocomoReport, load_locomo, run_locomo
from reverie.bench.locomo import K_BUDGET
from reverie.bench.endpoint import run_endpoint_bench
from reverie.bench.inputs import SIZES, run_input_sizes
from reverie.bench.scale import DEFAULT_CACHE, OTHER_EPISODES, ScaleReport, run_scale
from reverie.bench.scale import SIZES as SCALE_SIZES
from reverie.bench.serve import against_first, run_serve_bench
from reverie.bench.stream import DEFAULT_CACHE as STREAM_CACHE
from reverie.bench.stream import run_ingest_bench
from reverie.cli.common import (
    Engine,
    Json,
    Table,
    app,
    console,
    emit_json,
    chosen_store,
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
                store=chosen_store(),
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


LOCOMO_DEFAULT = Path("../shared/data/locomo")


@bench_app.command("scale")
def scale(
    episodes: Annotated[
        str, typer.Option("--episodes", help="Store size(s) in episodes, comma-separated (10k and 1m work too)."),
    ] = ",".join(str(n) for n in SCALE_SIZES),
    cache: Annotated[
        Path, typer.Option("--cache", help="Where built stores are kept, one home per size (episodes-N/).", file_okay=False),
    ] = DEFAULT_CACHE,
    recalls: Annotated[int, typer.Option("--recalls", min=1, help="Recalls timed per size.")] = 300,
    locomo: Annotated[
        Optional[Path],
        typer.Option("--locomo", file_okay=False, help=f"LoCoMo conversations for the dilution check (default {LOCOMO_DEFAULT} when it exists)."),
    ] = None,
    no_dilution: Annotated[bool, typer.Option("--no-dilution", help="Skip the dilution check.")] = False,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Build every size again, even when cached.")] = False,
    others: Annotated[
        int,
        typer.Option("--others", min=0, help=f"Make the largest size a shared store: this many other users of "
                     f"{OTHER_EPISODES:,} episodes each beside the measured user, who holds the rest "
                     "(--episodes 10k,100k,1m --others 800: a heavy user of 200k among 800 users)."),
    ] = 0,
    old_memories: Annotated[
        int,
        typer.Option("--old-memories", min=0, help="Also the old-memory check: the LoCoMo conversations ingested "
                     "first, this many newer synthetic episodes on top, then their questions (0 skips it; "
                     "30000 takes a few minutes)."),
    ] = 0,
    serve_requests: Annotated[
        int,
        typer.Option("--serve-requests", min=0, help="Recalls a row of the concurrency check: `reverie serve` "
                     "over the smallest one-user store with 1 and 2 workers and 1 and 8 clients (and, with "
                     "--store, 1 and 2 replicas over a PostgreSQL copy of it); 0 skips it. It serves a copy: "
                     "the cached stores stay as built."),
    ] = 400,
    as_json: Json = False,
) -> None:
    """Recall, learning, size and memory as one user's store grows; cached synthetic stores per size.

    With --store postgresql://... every size is measured on SQLite and on PostgreSQL side by side."""

    sizes = _sizes(episodes)
    with fail_cleanly():
        cases = []
        if not no_dilution or old_memories:
            folder = locomo if locomo is not None else (LOCOMO_DEFAULT if LOCOMO_DEFAULT.is_dir() else None)
            if folder is not None:
                cases = load_locomo(folder)
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=err_console, transient=True) as progress:
            status = progress.add_task("scale", total=None)
            builds: dict[int, TaskID] = {}

            def on_build(size: int, done: int, total: int) -> None:
                if size not in builds:
                    builds[size] = progress.add_task(f"building {size:,} episodes (add + learn)", total=total)
                progress.update(builds[size], completed=done)
                if done >= total:
                    del builds[size]  # the same size on another store gets a bar of its own

            report = run_scale(
                sizes, cache=cache, recalls=recalls, cases=cases, rebuild=rebuild, on_build=on_build,
                on_step=lambda label: progress.update(status, description=label), postgres=chosen_store(),
                others=others, old=old_memories, dilute=not no_dilution, serve_requests=serve_requests,
            )
    if as_json:
        emit_json(report.as_dict())
    else:
        _print_scale(report)


@bench_app.command("serve")
def serve_bench(
    home: Annotated[Path, typer.Option("--home", help="The memory home to serve (e.g. a `bench scale` store).", exists=True, file_okay=False)],
    user: Annotated[str, typer.Option("--user", "-u", help="Whose memory the recalls ask.")],
    workers: Annotated[str, typer.Option(help="Server process counts to compare, comma-separated.")] = "1,2",
    clients: Annotated[str, typer.Option(help="Concurrent client counts, comma-separated.")] = "1,8",
    requests: Annotated[int, typer.Option(min=1, help="Recalls per client count.")] = 200,
    replicas: Annotated[
        str, typer.Option(help="Separate `reverie serve` processes over one store to compare, comma-separated; "
                               "clients take turns among them.")
    ] = "1",
    as_json: Json = False,
) -> None:
    """Recall throughput and latency of `reverie serve --workers N`, with one client and with several.

    With --replicas N and --store postgresql://..., of N replicas over one store."""
    with fail_cleanly():
        reports = [
            run_serve_bench(home, user=user, workers=w, clients=_counts(clients, "--clients"), requests=requests,
                            replicas=r, store=chosen_store())
            for r in _counts(replicas, "--replicas")
            for w in _counts(workers, "--workers")
        ]
    against_first(reports)
    if as_json:
        emit_json(reports)
        return
    _print_serve(reports, f"reverie serve: recalls at budget 500 over {home.name}")


def _print_serve(reports: list[dict[str, Any]], title: str) -> None:
    """The rows of `reverie bench serve` reports (:func:`against_first` applied)."""
    table = Table(title=title)
    for col in ("replicas", "workers", "clients", "recalls/s", "x 1 client", "x first row", "p50 ms", "p95 ms",
                "errors", "client CPU ms", "clients a worker"):
        table.add_column(col, justify="right")
    for report in reports:
        for row in report["rows"]:
            table.add_row(str(report["replicas"]), str(report["workers"]), str(row["clients"]), f"{row['recalls_per_s']:.1f}",
                          f"{row['speedup']:.2f}", f"{row['x_first']:.2f}",
                          f"{row['p50_ms']:.1f}", f"{row['p95_ms']:.1f}", str(row["errors"]), f"{row['client_cpu_ms']:.2f}",
                          " / ".join(map(str, row.get("split", []))) or "-")
    console.print(table)


@bench_app.command("endpoint")
def endpoint_bench(
    episodes: Annotated[int, typer.Option(min=1, help="Episodes of generated conversation to learn.")] = 300,
    latency: Annotated[float, typer.Option(min=0.0, help="Seconds the stand-in endpoint takes to answer a call.")] = 0.2,
    concurrency: Annotated[str, typer.Option(help="llm.concurrency values to compare, comma-separated.")] = "1,4",
    users: Annotated[int, typer.Option(min=1, help="Users the episodes are shared among.")] = 1,
    learn_threads: Annotated[str, typer.Option(help="learn_threads values to compare, comma-separated.")] = "4",
    as_json: Json = False,
) -> None:
    """Learning through a slow model, per llm.concurrency and learn_threads pair.

    An OpenAI-compatible stand-in on 127.0.0.1 answers each step as the heuristic engine would,
    after --latency seconds; the same conversations are learned by one flush once per pair."""
    with fail_cleanly(), err_console.status(f"learning {episodes:,} episodes through the stand-in"):
        report = run_endpoint_bench(episodes=episodes, latency=latency, users=users,
                                    concurrency=_counts(concurrency, "--concurrency"),
                                    learn_threads=_counts(learn_threads, "--learn-threads"), store=chosen_store())
    if as_json:
        emit_json(report)
        return
    where = " into PostgreSQL" if report["store"] == "postgresql" else ""
    table = Table(title=f"Learning {episodes:,} episodes of {users} user(s){where} through an endpoint "
                        f"that answers in {latency:g} s")
    for col in ("llm.concurrency", "learn_threads", "learn s", "episodes/s", "turns/s", "calls", "most in flight",
                "learned", "facts"):
        table.add_column(col, justify="right")
    for row in report["rows"]:
        table.add_row(str(row["concurrency"]), str(row["learn_threads"]), f"{row['learn_seconds']:.1f}",
                      f"{row['episodes_per_s']:.1f}",
                      f"{row['turns_per_s']:.1f}", str(row["calls"]), str(row["most_in_flight"]),
                      f"{row['learned']:,}", f"{row['facts']:,}")
    console.print(table)


def _counts(value: str, option: str) -> list[int]:
    try:
        counts = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        counts = []
    if not counts or any(c < 1 for c in counts):
        raise typer.BadParameter(f"{value!r} is not a list of positive whole numbers", param_hint=option)
    return counts


@bench_app.command("ingest")
def ingest_bench(
    turns: Annotated[str, typer.Option("--turns", help="Turns in the JSONL file (100k and 1m work too).")] = "100000",
    cache: Annotated[
        Path, typer.Option("--cache", help="Where the generated JSONL files are kept (turns-N.jsonl).", file_okay=False),
    ] = STREAM_CACHE,
    learn: Annotated[bool, typer.Option("--learn/--no-learn", help="Learn as it ingests (the default), or only store.")] = True,
    as_json: Json = False,
) -> None:
    """Stream a large generated JSONL export into a fresh home: turns/s and peak RSS."""

    counts = _sizes(turns, what="turn", option="--turns")
    with fail_cleanly():
        results = []
        for count in counts:
            with err_console.status(f"ingesting {count:,} turns"):
                results.append(run_ingest_bench(count, cache=cache, learn=learn).as_dict())
    if as_json:
        emit_json({"ingest": results})
        return
    table = Table(title="A JSONL export streamed in (heuristic engine, a fresh home, a child process)")
    for name in ("turns", "file MB", "learn", "seconds", "turns/s", "peak RSS MB", "episodes", "facts"):
        table.add_column(name, justify="right")
    for r in results:
        table.add_row(f"{r['turns']:,}", str(r["file_mb"]), "yes" if r["learn"] else "no", str(r["seconds"]),
                      f"{r['turns_per_s']:,.0f}", str(r["peak_rss_mb"]), f"{r['episodes']:,}", f"{r['facts']:,}")
    console.print(table)


def _sizes(value: str, *, what: str = "episode", option: str = "--episodes") -> list[int]:
    out = []
    for part in value.split(","):
        text = part.strip().lower().replace("_", "")
        factor = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
        digits = text[:-1] if factor > 1 else text
        if not digits.isdigit() or int(digits) * factor <= 0:
            raise typer.BadParameter(f"{part.strip()!r} is not a positive {what} count", param_hint=option)
        out.append(int(digits) * factor)
    return sorted(set(out))


def _print_scale(report: ScaleReport) -> None:
    data = report.as_dict()
    sizes = data["sizes"]
    table = Table(title=f"One user's store as it grows (heuristic engine, recall at budget {data['budget']}, explain off)")
    table.add_column("")
    both = len({s["store"] for s in sizes}) > 1
    for size in sizes:
        where = {"sqlite": " SQLite", "postgresql": " PostgreSQL"}[size["store"]] if both else ""
        table.add_column(f"{size['episodes']:,} episodes{where}", justify="right")
    rows: list[tuple[str, Any]] = [
        ("measured user's episodes", lambda s: f"{s['user_episodes']:,}" + (
            f" + {s['others']['users']:,} users x {s['others']['episodes_each']:,}" if s["others"] else "")),
        ("its turns (messages)", lambda s: f"{s['messages']:,} in {s['threads']:,} threads"),
        ("ingest turns/s (add + learn)", lambda s: f"{s['ingest_turns_per_s']:,.0f}" + (
            f" (others: {s['others']['ingest_turns_per_s']:,.0f})" if s["others"] else "") + (
            " (copied from SQLite)" if s["copied_from"] else "")),
        ("learning turns/s, last 10%", lambda s: f"{s['tail']['learn_turns_per_s']:,.0f}"),
        ("build time", lambda s: (f"copied in {s['copy_seconds']:,.0f} s" if s["copied_from"]
                                  else f"{s['build_seconds']:,.0f} s") + (" (cached)" if s["cached"] else "")),
        ("recall p50", lambda s: f"{s['recall_ms']['p50']:.1f} ms"),
        ("recall p95", lambda s: f"{s['recall_ms']['p95']:.1f} ms"),
        ("recall p99", lambda s: f"{s['recall_ms']['p99']:.1f} ms"),
        ("warm-up p50 / p95 (page cache as found)",
         lambda s: f"{s['warmup_ms']['p50']:.1f} / {s['warmup_ms']['p95']:.1f} ms"),
        ("first recall after open", lambda s: f"{s['first_recall_ms']:.0f} ms (open {s['open_ms']:.0f} ms)"),
        ("store on disk", lambda s: f"{s['disk_mb']:,.1f} MB"),
        ("peak RSS, recall-only process", lambda s: f"{s['peak_rss_mb']:,.0f} MB"),
    ]
    if any(s.get("round_trips") is not None for s in sizes):  # what a server's distance costs a recall
        rows.append(("round trips a recall (PostgreSQL)",
                     lambda s: "-" if s.get("round_trips") is None else f"{s['round_trips']:.1f}"))
    for name, cell in rows:
        table.add_row(name, *(cell(s) for s in sizes))
    console.print(table)
    console.print(f"{sizes[0]['recalls']} recalls per size, about half about things the store holds, timed after "
                  "as many warm-up recalls of other queries; "
                  "ingest figures of a cached store are those recorded when it was built", style="dim")
    if data.get("machine"):
        m = data["machine"]
        console.print(f"machine reference (fixed work, not reverie's; lower is faster): Python {m['python_ms']:.1f} ms, "
                      f"SQLite {m['sqlite_version']} full text {m['sqlite_ms']:.1f} ms", style="dim")
    dilution, old = data["dilution"], data["old_memories"]
    if dilution is None:
        console.print(f"dilution check skipped: {data.get('dilution_skipped') or 'no LoCoMo folder'}", style="dim")
    else:
        _print_rows(dilution, f"Dilution: LoCoMo evidence recall @ {dilution['budget']} tokens, "
                              f"alone vs beside {dilution['store_episodes']:,} episodes (same user)", "diluted")
    if data.get("old_memories_skipped"):
        console.print(f"old-memory check skipped: {data['old_memories_skipped']}", style="dim")
    if old is not None:
        _print_rows(old, f"Old memories: LoCoMo evidence recall @ {old['budget']} tokens, alone vs ingested first "
                         f"with {old['newer_episodes']:,} newer episodes on top (same user)", "beneath")
    serve = data.get("serve")
    if serve is None:
        console.print(f"concurrency check skipped: {data.get('serve_skipped') or 'not asked for (--serve-requests 0)'}",
                      style="dim")
    else:
        where = f"the {serve['store_episodes']:,}-episode store"
        # (their ratios, the last rows' "x first row", are judged in the targets below)
        _print_serve(serve["workers"], f"Concurrency: reverie serve over {where} (SQLite)")
        if serve["replicas"]:
            _print_serve(serve["replicas"], f"Concurrency: replicas over {where} (PostgreSQL)")
    _print_targets(data["targets"])
    console.print(f"run took {data['seconds']:.0f} s", style="dim")


def _print_targets(rows: list[dict[str, Any]]) -> None:
    """The scale targets this run measured (reverie.bench.targets), each met or missed."""
    if not rows:
        console.print("no scale target measured by this run (see docs/scale.md)", style="dim")
        return
    table = Table(title="Targets (docs/scale.md), as this run measured them on this machine")
    for col in ("target", "where", "measured", "bound", "met"):
        table.add_column(col, justify="right" if col in ("measured", "bound") else "left")
    for t in rows:
        unit = f" {t['unit']}" if t["unit"] else ""
        table.add_row(t["name"], t["where"], f"{t['value']:,g}{unit}", f"{'>=' if t['at_least'] else '<='} {t['bound']:,g}{unit}",
                      "yes" if t["met"] else "[bold]no[/bold]")
    console.print(table)
    met = sum(1 for t in rows if t["met"])
    console.print(f"{met} of {len(rows)} met; speed figures move with the machine (see its reference above)", style="dim")


def _print_rows(check: dict[str, Any], title: str, label: str) -> None:
    """One table of a quality check: each conversation alone and in the large store."""
    table = Table(title=title)
    for col in ("conversation", "questions", "empty store", label, "difference"):
        table.add_column(col, justify="left" if col == "conversation" else "right")
    for row in [*check["conversations"], {"conversation": "all questions", **check["all_questions"]}]:
        table.add_row(row["conversation"], str(row["questions"]), f"{row['empty']:.3f}", f"{row['diluted']:.3f}",
                      f"{row['difference']:+.3f}")
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
    # every budget's recalls are timed, the recall at K_BUDGET (recall@k's) whatever the budgets
    ours_ms = {K_BUDGET: (ours.latency_p50_ms, ours.latency_p95_ms), **ours.latency_at_budget}
    base_ms = {K_BUDGET: (base.latency_p50_ms, base.latency_p95_ms), **base.latency_at_budget}
    for budget in sorted(ours_ms):
        rows.append((f"latency p50 @ {budget} tokens (ms)", ours_ms[budget][0], base_ms[budget][0], "{:.2f}"))
        rows.append((f"latency p95 @ {budget} tokens (ms)", ours_ms[budget][1], base_ms[budget][1], "{:.2f}"))
    rows.append(("ingest turns/s", ours.ingest_turns_per_s, base.ingest_turns_per_s, "{:,.0f}"))
    for name, a, b, fmt in rows:
        table.add_row(name, fmt.format(a), fmt.format(b), f"{a / b:.2f}x" if b else "-")
    console.print(table)
    notes = (
        "recall: mean over questions of the share of their evidence turns delivered",
        "  (a turn counts when a delivered item's provenance includes it: the issue's rule)",
        "held: the stricter reading - only turns whose words the delivered lines show",
        "recall@k: the first k episodes, facts and notes delivered at 2000 tokens",
        "latency: of the recall at each budget (and at 2000 tokens, where recall@k is read)",
        "recalls are read-only (track=False): the store does not change between questions",
        "ingest: reverie = add + learn (flush); BM25 = building its index",
        f"{report.without_evidence} questions without evidence ids skipped; run took {report.seconds:.1f} s",
    )
    for note in notes:
        console.print(note, style="dim", soft_wrap=True)
