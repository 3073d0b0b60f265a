"""The CLI, as a person or a script runs it."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reverie import Memory
from reverie.cli import app

runner = CliRunner()

CORE_COMMANDS = ("ingest", "remember", "facts", "profile", "episodes", "forget", "reinforce",
                 "export", "import", "stats", "demo", "recall", "feedback", "flush", "tags")


def run(*args: str, home=None):
    full = list(args) + (["--home", str(home)] if home is not None else [])
    return runner.invoke(app, full, catch_exceptions=False)


def test_help_lists_every_command_with_a_description():
    result = run("--help")
    assert result.exit_code == 0
    for command in CORE_COMMANDS:
        assert command in result.output
    assert "Store a fact you vouch for" in result.output


def _commands(command, path=()):
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def test_every_commands_summary_is_one_line_of_its_docstring():
    # the command lists show a docstring's first paragraph as written: a line break in it
    # shows as a broken line ("Input stored before" / "(the same file again) ...")
    import typer

    broken = []
    for path, command in _commands(typer.main.get_command(app)):
        doc = inspect.cleandoc(command.callback.__doc__ or "") if command.callback else ""
        if "\n" in doc.split("\n\n")[0]:
            broken.append(" ".join(path))
    assert broken == []
    assert len(list(_commands(typer.main.get_command(app)))) > 40


def test_remember_facts_reinforce_forget_round(home):
    made = json.loads(run("remember", "Prefers trash over rm", "--user", "ana", "--category", "preference", "--json", home=home).output)
    fact_id = made["id"]
    listed = json.loads(run("facts", "--user", "ana", "--json", home=home).output)
    assert [f["id"] for f in listed] == [fact_id]
    assert json.loads(run("reinforce", fact_id, "--user", "ana", "--json", home=home).output)["uses"] == 1
    assert run("forget", fact_id, "--user", "ana", home=home).exit_code == 0
    assert json.loads(run("facts", "--user", "ana", "--json", home=home).output) == []
    table = run("facts", "--user", "ana", "--status", "archived", home=home).output
    assert fact_id in table and "archived" in table


def test_errors_are_clear_and_exit_2(home):
    result = runner.invoke(app, ["forget", "fact_nope", "--user", "ana", "--home", str(home)])
    assert result.exit_code == 2
    assert "no fact 'fact_nope'" in result.output


def test_ingest_then_facts_profile_episodes(home, tmp_path):
    convo = tmp_path / "talk.json"
    convo.write_text(json.dumps([
        {"role": "user", "content": "I'm a data engineer at a bank."},
        {"role": "assistant", "content": "Nice."},
        {"role": "user", "content": "I prefer short answers with the conclusion first."},
        {"role": "assistant", "content": "Will do."},
    ]), encoding="utf-8")
    out = json.loads(run("ingest", str(convo), "--user", "ana", "--json", home=home).output)
    assert out["episodes"] == 2 and out["learned"] == 2
    facts = json.loads(run("facts", "--user", "ana", "--json", home=home).output)
    assert any("conclusion first" in f["content"].lower() for f in facts)
    profile = json.loads(run("profile", "--user", "ana", "--json", home=home).output)
    assert set(profile) == {"user", "history"}
    episodes = json.loads(run("episodes", "--user", "ana", "--json", home=home).output)
    assert len(episodes) == 2 and all(e["thread"] == "talk" for e in episodes)
    human = run("episodes", "--user", "ana", home=home).output
    assert "talk" in human


def test_profile_set_and_clear_a_section_and_undo_takes_it_back(home, tmp_path):
    # a talk among named people, learned before the profile was the user's own, left
    # another person's job in it: the CLI corrects it as the console and REST can
    convo = tmp_path / "talk.json"
    convo.write_text(json.dumps([{"role": "user", "content": "I'm a data engineer at a bank."},
                                 {"role": "assistant", "content": "Nice."}]), encoding="utf-8")
    run("ingest", str(convo), "--user", "ana", home=home)
    before = json.loads(run("profile", "--user", "ana", "--json", home=home).output)["user"]["workContext"]
    assert "data engineer" in before["summary"].lower()

    done = json.loads(run("profile", "--user", "ana", "--set", "user.workContext",
                          "Teaches maths in Lyon, mail ana@example.com", "--json", home=home).output)
    assert done["section"] == "user.workContext" and done["change"].startswith("chg_")
    assert done["profile"]["user"]["workContext"]["summary"] == "Teaches maths in Lyon, mail [email]"

    shown = run("profile", "--user", "ana", "--clear", "user.workContext", home=home)
    assert shown.exit_code == 0
    change = re.search(r"cleared user\.workContext \(undo: reverie undo (chg_\w+) --user ana\)", shown.output)
    assert change, shown.output
    assert json.loads(run("profile", "--user", "ana", "--json", home=home).output)["user"]["workContext"]["summary"] == ""

    assert run("undo", change.group(1), "--user", "ana", home=home).exit_code == 0
    back = json.loads(run("profile", "--user", "ana", "--json", home=home).output)["user"]["workContext"]
    assert back["summary"] == "Teaches maths in Lyon, mail [email]"


def test_changes_lists_the_journaled_changes_and_undo_refuses_to_lose_a_later_edit(home):
    run("profile", "--user", "ana", "--set", "user.workContext", "Teacher in Lyon", home=home)
    run("profile", "--user", "ana", "--set", "user.workContext", "Nurse in Paris since May", home=home)
    listed = json.loads(run("changes", "--user", "ana", "--json", home=home).output)
    assert [(c["action"], c["changes"], c["undone_at"]) for c in listed] == [("edit", 1, None), ("edit", 1, None)]
    later, first = listed[0]["id"], listed[1]["id"]
    assert [c["id"] for c in json.loads(run("changes", "--user", "ana", "--limit", "1", "--json", home=home).output)] == [later]
    table = run("changes", "--user", "ana", home=home).output
    assert first in table and later in table and "edit" in table

    refused = run("undo", first, "--user", "ana", home=home)
    assert refused.exit_code == 2 and later in refused.output and "undo" in refused.output
    summary = json.loads(run("profile", "--user", "ana", "--json", home=home).output)["user"]["workContext"]["summary"]
    assert summary == "Nurse in Paris since May"

    assert run("undo", later, "--user", "ana", home=home).exit_code == 0
    assert run("undo", first, "--user", "ana", home=home).exit_code == 0
    after = json.loads(run("changes", "--user", "ana", "--json", home=home).output)
    assert all(c["undone_at"] for c in after)
    assert json.loads(run("profile", "--user", "ana", "--json", home=home).output)["user"]["workContext"]["summary"] == ""


def test_changes_of_a_user_with_none_says_so(home):
    run("remember", "Likes jazz", "--user", "ana", home=home)
    shown = run("changes", "--user", "bo", home=home)
    assert shown.exit_code == 0 and "no journaled changes for bo" in shown.output
    assert json.loads(run("changes", "--user", "bo", "--json", home=home).output) == []


@pytest.mark.parametrize("args, says", [
    (["--set", "user.job", "x"], "unknown profile section 'user.job'"),
    (["--set", "user.workContext", "x", "--clear", "user.topOfMind"], "give one of them"),
    (["--set", "user.workContext", "x" * 5000], "characters"),
])
def test_profile_edits_refused_say_why_and_change_nothing(home, args, says):
    run("profile", "--user", "ana", "--set", "user.topOfMind", "Moving to Porto", home=home)
    before = json.loads(run("profile", "--user", "ana", "--json", home=home).output)
    result = runner.invoke(app, ["profile", "--user", "ana", *args, "--home", str(home)])
    assert result.exit_code == 2 and says in result.output, result.output
    assert json.loads(run("profile", "--user", "ana", "--json", home=home).output) == before


def test_ingest_of_a_broken_file_says_what_is_wrong(home, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    result = runner.invoke(app, ["ingest", str(bad), "--user", "ana", "--home", str(home)])
    assert result.exit_code == 2 and "not valid JSON" in result.output


def test_export_import_via_files(home, tmp_path):
    run("remember", "Lives in Lisbon", "--user", "ana", home=home)
    out = tmp_path / "ana.json"
    assert run("export", "--user", "ana", "--output", str(out), home=home).exit_code == 0
    other = tmp_path / "other"
    counts = json.loads(run("import", str(out), "--user", "ana", "--json", home=other).output)
    assert counts["facts"] == 1
    facts = json.loads(run("facts", "--user", "ana", "--json", home=other).output)
    assert [f["content"] for f in facts] == ["Lives in Lisbon"]


def test_recall_with_why_shows_score_parts(home):
    run("remember", "Cutover of the billing service is planned for November 28", "--user", "ana", home=home)
    result = run("recall", "when is the billing cutover?", "--user", "ana", "--why", home=home)
    assert result.exit_code == 0
    assert "<memory>" in result.output and "November 28" in result.output
    assert "relevance=" in result.output
    data = json.loads(run("recall", "billing cutover", "--user", "ana", "--json", home=home).output)
    assert data["items"][0]["kind"] == "fact" and "parts" in data["items"][0]


def test_recall_takes_the_configured_budget_unless_given_one(home, monkeypatch):
    run("remember", "Cutover of the billing service is planned for November 28", "--user", "ana", home=home)
    monkeypatch.setenv("REVERIE_BUDGET", "300")
    data = json.loads(run("recall", "billing cutover", "--user", "ana", "--json", home=home).output)
    assert data["budget"] == 300
    data = json.loads(run("recall", "billing cutover", "--user", "ana", "--budget", "800", "--json", home=home).output)
    assert data["budget"] == 800
    result = runner.invoke(app, ["recall", "billing cutover", "--user", "ana", "--budget", "100001", "--home", str(home)])
    assert result.exit_code != 0 and "budget must be a whole number of tokens from 1 to 100,000" in result.output


def test_recall_says_when_memory_matched_but_the_budget_holds_none(home):
    run("remember", "Cutover of the billing service is planned for November 28", "--user", "ana", home=home)
    out = run("recall", "billing cutover", "--user", "ana", "--budget", "25", home=home).output
    assert "<memory>" not in out and "none fits in 25 tokens" in out and "raise the budget" in out
    out = run("recall", "billing cutover", "--user", "bob", home=home).output
    assert "no memory matched this message" in out


def test_export_to_a_path_that_cannot_be_written_is_a_one_line_error(home, tmp_path):
    run("remember", "Lives in Lisbon", "--user", "ana", home=home)
    for target in (tmp_path / "missing" / "x.json", tmp_path):
        result = runner.invoke(app, ["export", "--user", "ana", "-o", str(target), "--home", str(home)])
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert f"cannot write the export to {target}" in result.output


def test_the_demo_never_writes_into_the_home_of_reverie_home(tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    run("remember", "Lives in Lisbon", "--user", "ana", home=mine)
    monkeypatch.setenv("REVERIE_HOME", str(mine))
    data = json.loads(runner.invoke(app, ["demo", "--json"], catch_exceptions=False).output)
    assert data["home"] != str(mine) and "Lives in Lisbon" not in data["facts"]
    monkeypatch.delenv("REVERIE_HOME")
    facts = json.loads(run("facts", "--user", "ana", "--json", home=mine).output)
    assert [f["content"] for f in facts] == ["Lives in Lisbon"]


def test_list_filters_refuse_what_matches_nothing_by_construction(home):
    run("remember", "Prefers tea", "--user", "ana", "--category", "preference", home=home)
    for args, said in ((["tags", "list", "--status", "bogus"], "status must be unexamined, active, deprecated or merged"),
                       (["facts", "--category", "preferenc"], "did you mean 'preference'?"),
                       (["facts", "--category", "beverages"], "unknown category 'beverages'")):
        result = runner.invoke(app, [*args, "--user", "ana", "--home", str(home)])
        assert result.exit_code == 2 and said in " ".join(result.output.split())
    found = json.loads(run("facts", "--user", "ana", "--category", "Preference", "--json", home=home).output)
    assert [f["content"] for f in found] == ["Prefers tea"]


def test_deleting_a_user_with_nothing_stored_says_so(home):
    run("remember", "Prefers tea", "--user", "ana", home=home)
    assert run("delete-user", "--user", "zed", "--confirm", "zed", home=home).output.strip() == (
        "nothing stored for zed: nothing deleted")
    assert "deleted the memory of ana: 1 facts" in run("delete-user", "--user", "ana", "--confirm", "ana", home=home).output


def test_stats_and_tags(home):
    run("remember", "Uses helix as editor", "--user", "ana", home=home)
    stats = json.loads(run("stats", "--json", home=home).output)
    assert stats["users"]["ana"]["facts"] == 1
    assert run("tags", "list", "--user", "ana", home=home).exit_code == 0


@pytest.mark.parametrize("flag", ["--json", None])
def test_demo_runs_offline_and_prints_blocks(tmp_path, flag):
    args = ["demo", "--home", str(tmp_path / "demo")] + ([flag] if flag else [])
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0
    if flag:
        data = json.loads(result.output)
        assert len(data["recalls"]) == 3
        assert all(r["context"].startswith("<memory>") for r in data["recalls"])
        assert not any("example.com" in f for f in data["facts"])
    else:
        assert "<memory>" in result.output and "why each item was chosen" in result.output
        # piped, a block is its title line and its text: no box drawn to the console's width
        assert "== Hi, can you help me plan my week?" in result.output
        # a profile line's row names the section it came from
        assert re.search(r"^profile +profile +1\.000 .*user\.workContext", result.output, re.M)
        assert max(len(line) for line in result.output.splitlines()) < 400


def test_knowledge_documents_from_files(home, tmp_path):
    doc = tmp_path / "release.md"
    doc.write_text("# Release checklist\n\n1. tag the commit\n2. build the wheel\n3. publish to the index\n", encoding="utf-8")
    added = json.loads(run("knowledge", "add", str(doc), "--user", "ana", "--tag", "release", "--json", home=home).output)
    assert added["title"] == "Release checklist" and added["tags"] == ["release"]
    listed = json.loads(run("knowledge", "list", "--user", "ana", "--json", home=home).output)
    assert [d["id"] for d in listed] == [added["id"]]
    recalled = json.loads(run("recall", "how do we publish a release wheel?", "--user", "ana", "--json", home=home).output)
    assert any(i["kind"] == "knowledge" and i["id"] == added["id"] for i in recalled["items"])
    bad = runner.invoke(app, ["knowledge", "add", str(doc), "--user", "ana", "--scope", "planet", "--home", str(home)])
    assert bad.exit_code == 2 and "scope" in bad.output
    again = run("knowledge", "add", str(doc), "--user", "ana", "--tag", "release", home=home).output
    assert again.startswith("already stored, nothing added:") and added["id"] in again
    assert len(json.loads(run("knowledge", "list", "--user", "ana", "--json", home=home).output)) == 1
    lost = runner.invoke(app, ["knowledge", "add", str(doc), "--user", "ana", "--scope", "agent", "--home", str(home)])
    assert lost.exit_code == 2 and "scope 'agent' needs the agent" in lost.output
    binary = tmp_path / "binary.md"
    binary.write_bytes(b"\xff\xfe\x00bad")
    broken = runner.invoke(app, ["knowledge", "add", str(binary), "--user", "ana", "--home", str(home)])
    assert broken.exit_code == 2 and "binary.md is not UTF-8 text" in broken.output
    theirs = runner.invoke(app, ["knowledge", "delete", added["id"], "--user", "bob", "--home", str(home)])
    assert theirs.exit_code == 2 and "no knowledge document" in theirs.output
    assert run("knowledge", "delete", added["id"], "--user", "ana", home=home).output.startswith(f"deleted {added['id']}")
    assert json.loads(run("knowledge", "list", "--user", "ana", "--json", home=home).output) == []


def test_an_agents_knowledge_is_left_out_of_another_agents_recall(home, tmp_path):
    doc = tmp_path / "deploy.md"
    doc.write_text("# Deploy runbook\n\nRoll the canary first, then the fleet.\n", encoding="utf-8")
    added = json.loads(run("knowledge", "add", str(doc), "--user", "ana", "--scope", "agent", "--agent", "ops-bot",
                           "--json", home=home).output)
    assert (added["scope"], added["agent"]) == ("agent", "ops-bot")
    mem = Memory(home, background=False)
    try:
        ids = lambda agent: [i.id for i in mem.recall("how do I deploy the canary?", user="ana", agent=agent).items]  # noqa: E731
        assert added["id"] in ids("ops-bot") and added["id"] in ids(None)
        assert added["id"] not in ids("travel-bot")
    finally:
        mem.close()


def test_remember_says_when_it_reinforced_or_replaced_instead_of_storing(home):
    first = run("remember", "Takes 5 mg of melatonin", "--user", "ana", home=home).output
    assert first.startswith("remembered")
    replaced = " ".join(run("remember", "Takes 10 mg of melatonin", "--user", "ana", home=home).output.split())
    assert "replaces fact_" in replaced and "archived" in replaced
    again = run("remember", "Takes 10 mg of melatonin", "--user", "ana", home=home).output
    assert again.startswith("already known, reinforced") and "[other 1x]" in again


def test_version_and_a_mistyped_category_suggests_the_right_one(home):
    from reverie import __version__

    assert run("--version").output.strip() == f"reverie {__version__}"
    result = runner.invoke(app, ["remember", "Likes tea", "--user", "ana", "--category", "prefrence", "--home", str(home)])
    assert result.exit_code == 2 and "did you mean 'preference'" in " ".join(result.output.split())
    assert json.loads(run("facts", "--user", "ana", "--json", home=home).output) == []


def test_errors_under_json_are_json(home):
    result = runner.invoke(app, ["remember", "Likes tea", "--user", "..", "--json", "--home", str(home)])
    assert result.exit_code == 2
    error = json.loads(result.stdout)
    assert error["type"] == "InvalidInput" and error["field"] == "user" and "user id" in error["error"]
    plain = runner.invoke(app, ["remember", "Likes tea", "--user", "..", "--home", str(home)])
    assert plain.exit_code == 2 and plain.stdout == "" and "error:" in plain.output
    # a command without a --json option right after one with --json, in the same process:
    # a plain error
    runner.invoke(app, ["remember", "Likes tea", "--user", "..", "--json", "--home", str(home)])
    after = runner.invoke(app, ["export", "--user", "..", "--home", str(home)])
    assert after.exit_code == 2 and after.stdout == "" and "error:" in after.output


def test_readme_documents_every_setting_with_its_environment_variable():
    from pathlib import Path

    from reverie.settings import LLMSettings, Settings

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    for name in Settings.model_fields:
        if name not in ("llm", "engines"):
            assert f"| `{name}` |" in readme and f"`REVERIE_{name.upper()}`" in readme, name
    for name in LLMSettings.model_fields:
        assert f"| `llm.{name}` |" in readme and f"`REVERIE_LLM_{name.upper()}`" in readme, name


def test_piped_output_is_plain_and_never_cuts_an_id(home):
    made = json.loads(run("remember", "A fact with a rather long line of content to show in the table " * 3,
                          "--user", "ana", "--json", home=home).output)
    table = run("facts", "--user", "ana", home=home).output  # CliRunner output is not a terminal
    assert made["id"] in table  # whole, on one line
    assert not any(ch in table for ch in "┏┃━│└╭")  # no box drawing when piped
    assert "\x1b[" not in table  # no colour codes


def test_a_command_that_does_not_serve_starts_without_the_server_stack():
    # FastAPI, uvicorn and the MCP SDK are imported by `serve` and `mcp` only
    probe = ("import sys, reverie.cli; "
             "print(sorted(m for m in ('fastapi', 'starlette', 'uvicorn', 'mcp', 'httpx', 'reverie.server') "
             "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_command_that_reads_no_message_starts_without_loading_the_chinese_dictionary():
    # jieba's dictionary takes about half a second to load: the first Chinese text read loads it
    probe = ("import jieba, reverie.cli; print(jieba.dt.initialized); "
             "from reverie.notes import is_small_talk; print(is_small_talk('哈哈 晚安'), jieba.dt.initialized)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True", "True"]
    # a server loads it at start-up, before it freezes its heap: no request pays it, nor the collector
    probe = "import jieba; from reverie.server.workers import settle_heap; settle_heap(); print(jieba.dt.initialized)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip() == "True"


def test_facts_and_tags_list_a_page_at_a_time_and_say_how_to_go_on(home):
    with Memory(home, background=False) as mem:
        for n in range(5):
            mem.remember(f"Project orbit{n} runs on module kestrel{n}", user="ana", tags=[f"orbit{n}"])
        every = {f.id for f in mem.facts(user="ana")}
    seen: set[str] = set()
    args = ["facts", "--user", "ana", "--limit", "2", "--json"]
    while True:
        result = run(*args, home=home)
        assert result.exit_code == 0
        page = json.loads(result.stdout)
        assert len(page) <= 2 and not seen & {f["id"] for f in page}
        seen |= {f["id"] for f in page}
        found = re.search(r"more: reverie facts .*--after (\S+)", result.stderr)
        if found is None:
            break
        args = ["facts", "--user", "ana", "--limit", "2", "--json", "--after", found.group(1)]
    assert seen == every
    tags = run("tags", "list", "--user", "ana", "--limit", "2", home=home)
    assert tags.exit_code == 0 and "orbit0" in tags.stdout and "orbit2" not in tags.stdout
    assert "more: reverie tags list --user ana" in tags.stderr


def test_knowledge_lists_a_page_at_a_time_the_newest_first(home):
    with Memory(home, background=False) as mem:
        for n in range(3):
            mem.add_knowledge(f"Runbook {n}", f"- step {n}", user="ana")
    first = run("knowledge", "list", "--user", "ana", "--limit", "2", "--json", home=home)
    assert [d["title"] for d in json.loads(first.stdout)] == ["Runbook 2", "Runbook 1"]
    found = re.search(r"more: reverie knowledge list --user ana .*--after (\S+)", first.stderr)
    assert found is not None
    rest = run("knowledge", "list", "--user", "ana", "--limit", "2", "--json", "--after", found.group(1), home=home)
    assert [d["title"] for d in json.loads(rest.stdout)] == ["Runbook 0"] and "more:" not in rest.stderr
    too_many = runner.invoke(app, ["knowledge", "list", "--user", "ana", "--limit", "101", "--home", str(home)])
    assert too_many.exit_code == 2 and "less than or equal to 100" in too_many.output


def test_notes_prints_the_latest_day_with_notes(home):
    with Memory(home, background=False) as mem:
        for day in ("2024-05-01", "2024-05-03", "2024-05-02"):
            mem.add([{"role": "user", "content": f"I always want the summary first, said on {day}",
                      "at": f"{day}T10:00:00Z"}], user="ana", thread=day)
        mem.flush(user="ana")
    result = run("notes", "--user", "ana", home=home)
    assert result.exit_code == 0 and result.stdout.startswith("2024-05-03") and "2024-05-02" not in result.stdout


def test_a_fact_of_invisible_characters_only_is_refused(home):
    result = run("remember", "\u200b\u200d\ufeff", "--user", "ana", home=home)
    assert result.exit_code == 2 and "shows nothing (invisible characters only)" in result.output
    with Memory(home, background=False) as mem:
        assert mem.facts(user="ana") == []


def test_an_export_of_a_user_with_nothing_stored_says_so_and_notes_of_no_day_fail_as_diary_does(home, tmp_path):
    run("remember", "Likes jazz", "--user", "ana", home=home)
    result = run("export", "--user", "anna", "-o", str(tmp_path / "anna.json"), home=home)
    assert result.exit_code == 0 and "nothing is stored for user 'anna'" in result.output
    assert json.loads((tmp_path / "anna.json").read_text(encoding="utf-8"))["facts"] == []
    assert "nothing is stored" not in run("export", "--user", "ana", "-o", str(tmp_path / "ana.json"), home=home).output
    for command in ("notes", "diary"):
        missing = run(command, "--user", "ana", "--date", "2020-01-01", home=home)
        assert missing.exit_code == 1 and "2020-01-01" in missing.output


def test_episodes_print_a_page_at_a_time_and_the_command_that_goes_on(home, tmp_path):
    talk = tmp_path / "talk.txt"
    talk.write_text("ana: I kayak on Sundays\nbot: nice\nana: I also hike\nbot: cool\nana: and I swim\nbot: ok\n",
                    encoding="utf-8")
    run("ingest", str(talk), "--user", "ana", home=home)
    first = run("episodes", "--user", "ana", "--limit", "2", "--json", home=home)
    cursor = re.search(r"--after (\S+)", first.output).group(1)
    rest = run("episodes", "--user", "ana", "--limit", "2", "--after", cursor, "--json", home=home)
    seen = [e["id"] for e in json.loads(first.stdout)] + [e["id"] for e in json.loads(rest.stdout)]
    assert len(seen) == len(set(seen)) == 3 and "more:" not in rest.output


def test_an_export_to_a_pipe_or_dash_writes_through_it_and_never_replaces_it(home, tmp_path):
    import os

    run("remember", "Likes jazz", "--user", "ana", home=home)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = __import__("threading").Thread(target=lambda: got.append(fifo.read_text(encoding="utf-8")))
    reader.start()
    result = run("export", "--user", "ana", "-o", str(fifo), home=home)
    reader.join(10)
    assert result.exit_code == 0 and json.loads(got[0])["facts"][0]["content"] == "Likes jazz"
    assert fifo.is_fifo()  # still the pipe, not a file renamed over it
    dashed = run("export", "--user", "ana", "-o", "-", home=home)
    assert json.loads(dashed.stdout)["facts"][0]["content"] == "Likes jazz" and not Path("-").exists()


def test_ingest_no_learn_only_stores_and_says_what_waits(home, tmp_path):
    path = tmp_path / "talk.jsonl"
    path.write_text('{"role":"user","content":"I work as a nurse in Porto"}\n{"role":"assistant","content":"ok"}\n'
                    '{"role":"user","content":"I love hiking in the Alps"}\n{"role":"assistant","content":"nice"}\n',
                    encoding="utf-8")
    result = run("ingest", str(path), "--user", "ana", "--no-learn", home=home)
    assert result.exit_code == 0, result.output
    assert "not learned yet (2 wait: `reverie flush --user ana`)" in result.output
    with Memory(home, background=False, learn="elsewhere") as mem:  # the process that closed learned nothing
        assert mem.learning_backlog(user="ana")[0] == 2 and not mem.facts(user="ana")
    assert "learned from 2" in run("flush", "--user", "ana", home=home).output


def test_recall_no_track_leaves_usage_counts_alone(home):
    with Memory(home, background=False) as mem:
        fact = mem.remember("Prefers window seats on long flights", user="ana", category="preference")
    for _ in range(2):
        assert "window seats" in run("recall", "which seat on the long flight?", "--user", "ana", "--no-track",
                                     home=home).output
    with Memory(home, background=False) as mem:
        assert mem.fact(fact.id).uses == 0
    run("recall", "which seat on the long flight?", "--user", "ana", home=home)
    with Memory(home, background=False) as mem:
        assert mem.fact(fact.id).uses == 1
