"""Maintenance: consolidate, tidy, clean and restore, health, MEMORY.md sync and undo,
through the library and the CLI."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest
from typer.testing import CliRunner

from reverie import InvalidInput, Memory
from reverie.cli import app
from reverie.errors import Conflict, NotFound
from reverie.journal import journal_key
from reverie.models import Fact, Provenance
from tests.edits import dreamed, edit_text
from tests.fake_openai import Reply

runner = CliRunner()
NOW = datetime(2024, 9, 1, 12, 0, tzinfo=timezone.utc)


def cli(home, *args: str):
    return runner.invoke(app, [*args, "--home", str(home)], catch_exceptions=False)


def put(mem: Memory, content: str, *, uses: int = 0, category: str = "preference", status: str = "consolidated",
        origin: str = "import", user: str = "ana") -> Fact:
    """A fact as an import or an older version could have left it (duplicates included)."""
    fact = Fact(user=user, content=content, category=category, uses=uses, status=status,
                provenance=Provenance(origin=origin))
    mem.store.put_fact(fact)
    return fact


def status(mem: Memory, fact: Fact) -> str:
    return mem.fact(fact.id).status


# ---------------------------------------------------------------- consolidate

def test_consolidate_folds_duplicates_into_the_most_used_and_keeps_every_unique_entry(bmem):
    mem = bmem  # on SQLite and on PostgreSQL
    low = put(mem, "Prefers tabs over spaces", uses=1)
    high = put(mem, "prefers tabs over spaces.", uses=4)
    pending = put(mem, "Prefers tabs over spaces!", status="pending")
    wordy = put(mem, "Always writes unit tests before merging feature branches into main repository",
                category="behavior", uses=2)
    near = put(mem, "Always writes unit tests before merging feature branches into the main repository",
               category="behavior")
    similar = put(mem, "Prefers tabs over spaces in Python code")
    unique = put(mem, "Never deploys on Fridays", category="constraint")

    preview = mem.consolidate(user="ana", dry_run=True)
    assert preview.archived == 3 and all(status(mem, f) != "archived" for f in (low, pending, near))

    report = mem.consolidate(user="ana")
    kept = {g.kept.fact_id: sorted(a.fact_id for a in g.archived) for g in report.groups}
    assert kept == {high.id: sorted([low.id, pending.id]), wordy.id: [near.id]}
    for dup, keeper in ((low, high), (pending, high), (near, wordy)):
        archived = mem.fact(dup.id)
        assert archived.status == "archived" and archived.superseded_by == keeper.id
    assert mem.fact(high.id).uses == 4 and set(mem.fact(high.id).provenance.facts) == {low.id, pending.id}
    assert {f.id for f in mem.facts(user="ana")} == {high.id, wordy.id, similar.id, unique.id}

    mem.undo(report.journal, user="ana")
    assert {f.id for f in mem.facts(user="ana")} == {low.id, high.id, pending.id, wordy.id, near.id, similar.id, unique.id}
    assert mem.fact(pending.id).status == "pending"


# ---------------------------------------------------------------- tidy

def tidy_plan(ids: dict[str, str]) -> dict:
    return {"actions": [
        {"op": "rewrite", "fact_id": ids["wordy"], "content": "Prefers short answers, conclusion first",
         "reason": "shorter"},
        {"op": "rewrite", "fact_id": ids["jazz"], "content": "Likes jazz, classical music and opera",
         "reason": "more complete"},
        {"op": "rewrite", "fact_id": ids["meat"], "content": "Eats meat", "reason": "shorter"},
        {"op": "rewrite", "fact_id": ids["tea"], "content": "Really likes green tea, a lot", "reason": "clearer"},
        {"op": "remove", "fact_id": ids["rule"], "reason": "too generic"},
        {"op": "remove", "fact_id": ids["port"], "reason": "temporary state"},
        {"op": "remove", "fact_id": ids["hiking"], "reason": ""},
        {"op": "add", "content": "Owns a sailing boat", "reason": f"replaces {ids['jazz']}"},
    ]}


@pytest.fixture
def tidy_facts(mem):
    facts = {
        "wordy": put(mem, "The user said that they really prefer short answers with the conclusion first"),
        "jazz": put(mem, "Likes jazz"),
        "meat": put(mem, "Does not eat meat", category="identity"),
        "rule": put(mem, "Never deploy on Fridays", category="constraint"),
        "port": put(mem, "Dev server uses port 3000", category="context"),
        "hiking": put(mem, "Likes hiking"),
        "tea": put(mem, "Likes green tea"),
    }
    mem.close()
    return facts


def test_tidy_shows_a_checked_diff_first_and_applies_it_reversibly(home, tidy_facts, fake_openai):
    fake_openai.respond_by_step({"tidy": tidy_plan({k: f.id for k, f in tidy_facts.items()})})
    mem = Memory(home, background=False, engines={"tidy": "openai"},
                 llm={"base_url": fake_openai.base_url, "model": "fake-model", "max_retries": 0})
    try:
        proposal = mem.tidy(user="ana", dry_run=True)
        verdict = {c.fact_id or c.after: c.refused for c in proposal.changes}
        ids = {k: f.id for k, f in tidy_facts.items()}
        assert verdict[ids["wordy"]] == "" and verdict[ids["port"]] == ""
        assert "facts do not (classical, music, opera)" in verdict[ids["jazz"]]
        assert "neither shorter nor clearer" in verdict[ids["tea"]]
        assert "flip" in verdict[ids["meat"]]
        assert "user constraint" in verdict[ids["rule"]]
        assert "when unsure" in verdict[ids["hiking"]]
        assert "facts do not" in verdict["Owns a sailing boat"]
        diff = proposal.diff()
        assert f"@@ rewrite {ids['wordy']}: shorter\n- {tidy_facts['wordy'].content}\n+ Prefers short answers, conclusion first" in diff
        assert f"@@ keep {ids['rule']} as it is (not remove: it is a user constraint" in diff
        assert mem.fact(ids["wordy"]).content == tidy_facts["wordy"].content  # a dry run changes nothing

        applied = mem.tidy(user="ana", proposal=proposal)
        assert applied.applied and len(applied.accepted) == 2
        assert mem.fact(ids["wordy"]).content == "Prefers short answers, conclusion first"
        assert mem.fact(ids["port"]).status == "archived"
        assert all(mem.fact(ids[k]).content == tidy_facts[k].content for k in ("jazz", "meat", "tea"))
        assert all(mem.fact(ids[k]).status == "consolidated" for k in ("jazz", "meat", "rule", "hiking", "tea"))

        mem.undo(applied.journal, user="ana")
        assert mem.fact(ids["wordy"]).content == tidy_facts["wordy"].content
        assert mem.fact(ids["port"]).status == "consolidated"
    finally:
        mem.close()


def test_tidy_cli_dry_run_shows_the_diff_and_yes_applies(home, tidy_facts, fake_openai):
    fake_openai.respond_by_step({"tidy": tidy_plan({k: f.id for k, f in tidy_facts.items()})})
    llm = ["--engine", "openai", "--base-url", fake_openai.base_url, "--model", "fake-model"]
    shown = cli(home, "tidy", "--user", "ana", "--dry-run", *llm)
    assert shown.exit_code == 0
    assert "+ Prefers short answers, conclusion first" in shown.output
    with Memory(home, background=False) as mem:
        assert mem.fact(tidy_facts["port"].id).status == "consolidated"
    declined = runner.invoke(app, ["tidy", "--user", "ana", "--home", str(home), *llm], input="n\n")
    assert "Apply 2 change(s)?" in declined.output and "nothing changed" in declined.output
    done = cli(home, "tidy", "--user", "ana", "--yes", *llm)
    assert done.exit_code == 0 and "applied 2 change(s) (undo: reverie undo chg_" in done.output
    with Memory(home, background=False) as mem:
        assert mem.fact(tidy_facts["port"].id).status == "archived"


# ---------------------------------------------------------------- clean and restore

def stored_back_then(mem, episode, when):
    """An episode that has been in memory since ``when`` (clean counts from the last moment
    an episode mattered: it happened, it was stored, it was used)."""
    episode = mem.episode(episode.id)
    episode.created_at = when
    mem.store.put_episode(episode)
    return episode


def test_clean_archives_faded_episodes_and_restore_brings_them_back(bmem):
    mem = bmem  # on SQLite and on PostgreSQL
    old, used, recent = (
        stored_back_then(mem, mem.add([f"I mentioned {topic} once"], user="ana", at=when)[0], when)
        for topic, when in (("the harbour trip", NOW - timedelta(days=100)),
                            ("the garden plan", NOW - timedelta(days=100)), ("the new bike", NOW - timedelta(days=5)))
    )
    mem.store.touch("episode", [used.id], NOW - timedelta(days=2))
    mem.store.touch("episode", [used.id], NOW - timedelta(days=1))

    preview = mem.clean(user="ana", now=NOW, dry_run=True)
    assert [i.episode_id for i in preview.archived] == [old.id]
    assert not mem.episode(old.id).archived

    report = mem.clean(user="ana", now=NOW)
    assert [i.episode_id for i in report.archived] == [old.id] and report.kept == 2
    assert report.archived[0].weight < mem.settings.clean_weight_threshold
    assert mem.episode(old.id).archived  # archived, never deleted
    assert {e.id for e in mem.episodes(user="ana")} == {used.id, recent.id}
    assert mem.store.search("ana", ["harbour"], ["episode"], 5) == []

    assert not mem.restore(old.id, user="ana").archived
    assert {e.id for e in mem.episodes(user="ana")} == {old.id, used.id, recent.id}
    assert [h.id for h in mem.store.search("ana", ["harbour"], ["episode"], 5)] == [old.id]


def test_clean_weighs_every_episode_a_page_at_a_time(bmem, monkeypatch):
    import reverie.maintenance as maintenance

    mem = bmem
    monkeypatch.setattr(maintenance, "CLEAN_PAGE", 3)  # seven episodes: three pages
    faded = []
    for n in range(7):
        when = NOW - timedelta(days=100 if n % 2 else 5)
        ep = stored_back_then(mem, mem.add([f"I mentioned topic{n} once"], user="ana", at=when)[0], when)
        if n % 2:
            faded.append(ep.id)
    with mem.turn("a turn still pending", user="ana"):
        report = mem.clean(user="ana", now=NOW)  # the pending turn is neither weighed nor archived
    assert sorted(i.episode_id for i in report.archived) == sorted(faded) and report.kept == 7 - len(faded)
    assert sorted(e.id for e in mem.episodes(user="ana", archived=True, limit=None)) == sorted(faded)


def test_clean_and_restore_from_the_cli(home):
    with Memory(home, background=False) as mem:
        when = datetime.now(timezone.utc) - timedelta(days=200)
        old = stored_back_then(mem, mem.add(["I mentioned the harbour trip once"], user="ana", at=when)[0], when)
    cleaned = json.loads(cli(home, "clean", "--user", "ana", "--json").output)
    assert [i["episode_id"] for i in cleaned["archived"]] == [old.id]
    assert cli(home, "restore", old.id, "--user", "ana").exit_code == 0
    with Memory(home, background=False) as mem:
        assert not mem.episode(old.id).archived


def test_a_forgotten_fact_comes_back_with_restore_from_the_cli(home):
    with Memory(home, background=False) as mem:
        fact = mem.remember("Keeps bees on the roof", user="ana", category="context")
        mem.forget(fact.id, user="ana")
        with pytest.raises(InvalidInput, match=f"reverie restore {fact.id}"):
            mem.reinforce(fact.id, user="ana")
    assert cli(home, "restore", fact.id, "--user", "ana").exit_code == 0
    with Memory(home, background=False) as mem:
        assert mem.fact(fact.id).status == "consolidated"
        # a fact comes back in the tier it left: a pending one stays pending
        learned = Fact(user="ana", content="Maybe likes jazz", status="pending")
        mem.store.put_fact(learned)
        mem.forget(learned.id, user="ana")
        assert mem.restore_fact(learned.id, user="ana").status == "pending"
        with pytest.raises(InvalidInput, match="not archived: nothing to restore"):
            mem.restore_fact(learned.id, user="ana")


# ---------------------------------------------------------------- health

def test_health_reports_the_signs_and_strict_fails_an_unhealthy_store(home):
    with Memory(home, background=False) as mem:
        put(mem, "Prefers tabs over spaces", uses=3)
        put(mem, "prefers tabs over spaces.", uses=1)
        put(mem, "Likes strong coffee", uses=3)
        put(mem, "Does not like strong coffee", uses=0)
        put(mem, "Writes " + "very " * 30 + "long entries", uses=5, category="behavior")
        report = mem.health(user="ana")
    assert not report.healthy
    assert len(report.duplicates) == 1 and len(report.contradictions) == 1
    assert report.high_priority == 3 and report.never_used == 1 and len(report.long_entries) == 1
    assert any("consolidate" in r for r in report.reasons) and any("contradict" in r for r in report.reasons)

    assert cli(home, "health", "--user", "ana").exit_code == 0
    strict = cli(home, "health", "--user", "ana", "--strict")
    assert strict.exit_code == 1 and "unhealthy" in strict.output
    data = json.loads(cli(home, "health", "--user", "ana", "--json").output)
    assert data["healthy"] is False and data["tags"] == {}


def test_health_strict_passes_a_healthy_store(home):
    with Memory(home, background=False) as mem:
        for content in ("Prefers tabs over spaces", "Likes strong coffee", "Never deploys on Fridays"):
            put(mem, content, uses=4)
        put(mem, "Decided to keep the monorepo", status="pending")
    result = cli(home, "health", "--user", "ana", "--strict")
    assert result.exit_code == 0 and "healthy" in result.output


# ---------------------------------------------------------------- MEMORY.md hand edits

def lines_of(text: str) -> dict[str, str]:
    return {m.group(2): m.group(1) for m in re.finditer(r"^- \[\d+x\] (.*) <!-- (fact_\w+) -->$", text, re.M)}


def test_hand_edits_of_memory_md_are_taken_in_by_sync_and_survive_the_next_dream(mem, home):
    tea = mem.remember("Prefers tea over coffee in the morning", user="ana", category="preference", area="General")
    jazz = mem.remember("Likes jazz", user="ana", category="preference")
    mono = mem.remember("Decided to keep the monorepo", user="ana", category="decision")
    mem.set_profile("user.workContext", "Data engineer at Contoso", user="ana")
    path = dreamed(mem, home)
    text = path.read_text(encoding="utf-8")
    assert set(lines_of(text)) == {tea.id, jazz.id, mono.id}

    edited = (
        text.replace("Prefers tea over coffee in the morning", "Prefers green tea over coffee in the morning")
        .replace(f"- [0x] Likes jazz <!-- {jazz.id} -->\n", "")
        .replace("## Decisions\n", "## Decisions\n\n- Decided to move the team to weekly releases\n")
        .replace("Data engineer at Contoso", "Staff data engineer at Contoso")
    )
    path.write_text(edited, encoding="utf-8")
    report = mem.sync(user="ana")
    assert [e.fact_id for e in report.edited] == [tea.id]
    assert [d.fact_id for d in report.deleted] == [jazz.id]
    assert [a.content for a in report.added] == ["Decided to move the team to weekly releases"]
    assert report.profile == ["user.workContext"]

    assert mem.fact(tea.id).content == "Prefers green tea over coffee in the morning"
    assert mem.fact(jazz.id).status == "archived"
    added = mem.fact(report.added[0].fact_id)
    assert added.category == "decision" and added.status == "consolidated" and added.provenance.origin == "sync"
    assert mem.profile(user="ana").user.work_context.summary == "Staff data engineer at Contoso"
    synced = path.read_text(encoding="utf-8")
    assert lines_of(synced)[added.id] == "Decided to move the team to weekly releases"  # now with its marker

    # edited again by hand, then straight into a dream: the edit is taken in first
    path.write_text(synced.replace("green tea", "jasmine tea"), encoding="utf-8")
    assert mem.dream(user="ana", force=True).status == "done"
    final = lines_of(path.read_text(encoding="utf-8"))
    assert final[tea.id] == "Prefers jasmine tea over coffee in the morning"
    assert jazz.id not in final and added.id in final
    assert mem.sync(user="ana").changed is False


def test_a_long_fact_survives_a_sync_of_other_edits_and_a_too_long_line_is_refused_with_its_text(mem, home):
    # a fact of up to max_fact_chars (1000) is stored whole; a sync of another edit must not
    # cut it, and a hand-written line over the limit is refused, said, and handed back
    long = "Keeps a reading list: " + ", ".join(f"book number {i}" for i in range(50))
    assert 160 < len(long) <= 1000
    kept = mem.remember(long, user="ana", category="preference")
    jazz = mem.remember("Likes jazz", user="ana", category="preference")
    path = dreamed(mem, home)
    too_long = "Decided " + "very " * 250 + "carefully"
    path.write_text(path.read_text(encoding="utf-8").replace("Likes jazz", "Likes cool jazz")
                    .replace("### General\n", f"### General\n\n- {too_long}\n"), encoding="utf-8")
    report = mem.sync(user="ana")
    assert [e.fact_id for e in report.edited] == [jazz.id] and report.added == []
    assert [r.content for r in report.refused] == [too_long]
    assert "max_fact_chars" in report.refused[0].reason
    assert mem.fact(kept.id).content == long
    assert lines_of(path.read_text(encoding="utf-8"))[kept.id] == long


def test_sync_changes_nothing_when_memory_md_is_missing_and_undo_rejects_unknown_ids(mem, home):
    fact = mem.remember("Likes jazz", user="ana", category="preference")
    assert mem.dream(user="ana").status == "done"
    (home / "users" / "ana" / "MEMORY.md").unlink()
    assert mem.sync(user="ana").changed is False
    assert mem.fact(fact.id).status == "consolidated"
    with pytest.raises(NotFound):
        mem.undo("chg_0000000000000000", user="ana")


def test_clean_leaves_freshly_ingested_old_history_alone(mem):
    from datetime import datetime, timedelta, timezone

    old = datetime.now(timezone.utc) - timedelta(days=400)
    mem.add([{"role": "user", "content": f"Long ago we visited the lighthouse number {i}"} for i in range(3)],
            user="ana", at=old, group="message")
    report = mem.clean(user="ana", dry_run=True)
    assert report.archived == [] and report.kept == 3
    later = datetime.now(timezone.utc) + timedelta(days=200)  # still never recalled by then
    assert len(mem.clean(user="ana", dry_run=True, now=later).archived) == 3


def test_undoing_a_sync_also_takes_back_its_profile_edit(mem, home):
    mem.remember("Likes jazz", user="ana", category="preference")
    mem.set_profile("user.cognitiveStyle", "Conclusion first, then details", user="ana")
    path = dreamed(mem, home)
    edit_text(path, "Conclusion first, then details", "Details first")
    report = mem.sync(user="ana")
    assert report.profile == ["user.cognitiveStyle"] and report.journal  # a profile-only sync can be undone
    assert mem.profile(user="ana").user.cognitive_style.summary == "Details first"
    mem.undo(report.journal, user="ana")
    assert mem.profile(user="ana").user.cognitive_style.summary == "Conclusion first, then details"


def test_undoing_the_first_edit_of_a_section_leaves_it_never_set(mem):
    mem.set_profile("user.topOfMind", "Moving to Lisbon", user="ana")
    change = mem.changes(user="ana")[0]
    mem.undo(change.id, user="ana")
    section = mem.profile(user="ana").user.top_of_mind
    assert section.summary == "" and section.updated_at is None  # not "updated" at the undo's time


def test_clean_retires_tags_that_never_recurred_and_undo_brings_them_back(bmem):
    mem = bmem  # on SQLite and on PostgreSQL
    from datetime import timedelta

    from reverie.models import utcnow

    mem.remember("Plays the theremin", user="ana", tags=["theremin"])
    mem.remember("Likes jazz records", user="ana", tags=["jazz"])
    mem.remember("Went to a jazz club", user="ana", tags=["jazz"])
    writer_tags = {t["name"]: t for t in mem.tags(user="ana")}
    assert writer_tags["theremin"]["items"] == 1 and writer_tags["jazz"]["items"] == 2
    with mem.store.transaction():
        for tag in mem.store.list_tags("ana"):
            tag.status = "active"
            mem.store.put_tag(tag)
    assert mem.clean(user="ana").retired_tags == []  # young tags stay
    later = utcnow() + timedelta(days=mem.settings.clean_min_age_days + 1)
    report = mem.clean(user="ana", now=later)
    assert report.retired_tags == ["theremin"] and report.journal
    assert {t["name"]: t["status"] for t in mem.tags(user="ana")} == {"jazz": "active", "theremin": "deprecated"}
    mem.undo(report.journal, user="ana")
    assert {t["name"]: t["status"] for t in mem.tags(user="ana")}["theremin"] == "active"


def test_a_tag_merge_is_journaled_and_undo_gives_the_merged_tag_its_items_back(bmem):
    mem = bmem  # on SQLite and on PostgreSQL
    trek = mem.remember("Went trekking in Nepal", user="ana", tags=["trekking"])
    both = mem.remember("Trekked and hiked the Alps", user="ana", tags=["trekking", "hiking"])
    hike = mem.remember("Hikes every summer", user="ana", tags=["hiking"])
    assert mem.merge_tags("trekking", "hiking", user="ana") == 1  # `both` had hiking already
    tags = {t["name"]: t for t in mem.tags(user="ana")}
    assert tags["trekking"]["status"] == "merged" and tags["hiking"]["items"] == 3
    [change] = [c for c in mem.changes(user="ana") if c.action == "tags"]
    mem.undo(change.id, user="ana")
    tags = {t["name"]: t for t in mem.tags(user="ana")}
    assert tags["trekking"]["status"] != "merged" and tags["trekking"]["merged_to"] is None
    assert tags["trekking"]["items"] == 2 and tags["hiking"]["items"] == 2
    carrying = {p.id for p in mem.store.postings("ana", ["trekking"], ["fact"])}
    assert carrying == {trek.id, both.id} and hike.id not in carrying


# ---------------------------------------------------------------- undo: later changes, deleted facts

def test_undo_refuses_while_a_later_edit_of_the_same_profile_section_stands(bmem):
    mem = bmem  # on SQLite and on PostgreSQL
    mem.set_profile("user.workContext", "Teacher in Lyon", user="ana")
    first = mem.changes(user="ana")[0].id
    mem.set_profile("user.workContext", "Nurse in Paris since May", user="ana")
    second = mem.changes(user="ana")[0].id
    mem.set_profile("user.topOfMind", "Moving to Lisbon", user="ana")  # another section: no clash

    with pytest.raises(Conflict) as refused:
        mem.undo(first, user="ana")
    assert second in str(refused.value) and "first" in str(refused.value)
    assert mem.profile(user="ana").user.work_context.summary == "Nurse in Paris since May"  # nothing changed
    assert mem.changes(user="ana")[-1].undone_at is None

    mem.undo(second, user="ana")  # the newest first, then the earlier one may go
    mem.undo(first, user="ana")
    profile = mem.profile(user="ana").user
    assert profile.work_context.summary == "" and profile.top_of_mind.summary == "Moving to Lisbon"


def test_undo_refuses_while_a_later_sync_edited_the_same_fact(mem, home):
    tea = mem.remember("Prefers tea over coffee", user="ana", category="preference")
    jazz = mem.remember("Likes jazz", user="ana", category="preference")
    path = dreamed(mem, home)
    edit_text(path, "tea over", "green tea over")
    first = mem.sync(user="ana").journal
    edit_text(path, "green tea", "jasmine tea")
    second = mem.sync(user="ana").journal
    edit_text(path, "Likes jazz", "Likes cool jazz")
    other = mem.sync(user="ana").journal  # a later change of another fact does not stand in the way
    shown = path.read_text(encoding="utf-8")

    with pytest.raises(Conflict) as refused:
        mem.undo(first, user="ana")
    assert second in str(refused.value) and other not in str(refused.value)
    assert mem.fact(tea.id).content == "Prefers jasmine tea over coffee"
    assert path.read_text(encoding="utf-8") == shown

    mem.undo(second, user="ana")
    mem.undo(first, user="ana")
    assert mem.fact(tea.id).content == "Prefers tea over coffee" and mem.fact(jazz.id).content == "Likes cool jazz"
    assert lines_of(path.read_text(encoding="utf-8"))[tea.id] == "Prefers tea over coffee"


def test_undo_of_a_tag_change_waits_for_a_later_merge_of_that_tag(bmem):
    mem = bmem  # on SQLite and on PostgreSQL
    mem.remember("Paints watercolours", user="ana", tags=["painting"])
    mem.remember("Draws comics", user="ana", tags=["art"])
    mem.set_tag_status("art", "deprecated", user="ana")
    deprecated = mem.changes(user="ana")[0].id
    mem.merge_tags("art", "painting", user="ana")
    merged = mem.changes(user="ana")[0].id
    with pytest.raises(Conflict) as refused:
        mem.undo(deprecated, user="ana")
    assert merged in str(refused.value)
    assert {t["name"]: t["status"] for t in mem.tags(user="ana")}["art"] == "merged"
    mem.undo(merged, user="ana")  # an undone later change no longer stands in the way
    mem.undo(deprecated, user="ana")
    assert {t["name"]: t["status"] for t in mem.tags(user="ana")}["art"] != "deprecated"


def test_undo_reads_only_the_journals_newer_than_the_change(bmem):
    mem = bmem  # on SQLite and on PostgreSQL
    mem.set_profile("user.topOfMind", "Moving to Lisbon", user="ana")
    older = mem.changes(user="ana")[0]
    mem.set_profile("user.workContext", "Teacher in Lyon", user="ana")
    target = mem.changes(user="ana")[0].id
    # an older record that cannot be read as a journal: undo never needs to open it
    broken = {"id": older.id, "user": "ana", "action": "edit", "at": older.at.isoformat(), "changes": 42}
    with mem.store.transaction():
        mem.store.set_meta(journal_key(older.id), json.dumps(broken))
    assert mem.undo(target, user="ana").restored == 1
    assert mem.profile(user="ana").user.work_context.summary == ""


def test_a_hard_deleted_fact_stays_deleted_when_the_change_that_archived_it_is_undone(bmem):
    mem = bmem  # on SQLite and on PostgreSQL
    keep = put(mem, "Prefers tabs over spaces", uses=4)
    dups = [put(mem, "prefers tabs over spaces."), put(mem, "Prefers tabs over spaces!")]
    report = mem.consolidate(user="ana")
    assert report.archived == 2 and all(status(mem, d) == "archived" for d in dups)
    for dup in dups:
        mem.forget(dup.id, user="ana", hard=True)
    stored = mem.store.get_meta(journal_key(report.journal))
    assert all(json.dumps(d.content) not in stored for d in dups)  # their text left the journal

    undone = mem.undo(report.journal, user="ana")
    assert (undone.restored, undone.archived, undone.skipped) == (1, 0, 2)
    assert [f.id for f in mem.facts(user="ana", status="archived")] == []
    for dup in dups:
        with pytest.raises(NotFound):
            mem.fact(dup.id)
    assert mem.fact(keep.id).status == "consolidated"


def test_undo_from_the_cli_says_it_skipped_a_hard_deleted_fact(mem, home):
    put(mem, "Prefers tabs over spaces", uses=4)
    dup = put(mem, "Prefers tabs over spaces!")
    report = mem.consolidate(user="ana")
    assert cli(home, "forget", dup.id, "--user", "ana", "--hard").exit_code == 0
    result = cli(home, "undo", report.journal, "--user", "ana")
    assert result.exit_code == 0 and "1 restored, 0 archived, 1 skipped (deleted for good since)" in result.output
    with pytest.raises(NotFound):
        mem.fact(dup.id)


def test_a_hard_deleted_fact_does_not_come_back_with_a_sync_of_other_edits(mem, home):
    gone = mem.remember("Keeps a diary in Esperanto", user="ana", category="behavior")
    mem.remember("Likes jazz", user="ana", category="preference")
    assert mem.dream(user="ana").status == "done"
    mem.forget(gone.id, user="ana", hard=True)
    path = home / "users" / "ana" / "MEMORY.md"
    edit_text(path, "Likes jazz", "Likes cool jazz")
    report = mem.sync(user="ana")
    assert report.added == [] and [e.content for e in report.edited] == ["Likes cool jazz"]
    assert all("Esperanto" not in f.content for f in mem.facts(user="ana", status="archived") + mem.facts(user="ana"))
    assert "Esperanto" not in path.read_text(encoding="utf-8")


def test_undoing_the_first_dream_leaves_memory_md_matching_the_store(mem, home):
    keep = put(mem, "Prefers tabs over spaces", uses=4)
    dups = [put(mem, "prefers tabs over spaces."), put(mem, "Prefers tabs over spaces!")]
    jazz = put(mem, "Likes jazz records", uses=1)
    run = mem.dream(user="ana")
    path = home / "users" / "ana" / "MEMORY.md"
    assert run.status == "done" and set(lines_of(path.read_text(encoding="utf-8"))) == {keep.id, jazz.id}

    mem.undo(run.id, user="ana")
    text = path.read_text(encoding="utf-8")
    assert set(lines_of(text)) == {f.id for f in mem.facts(user="ana", status="consolidated")} == {
        keep.id, jazz.id, *(d.id for d in dups)}
    assert "last distilled" not in text  # the dream that distilled it was taken back
    assert mem.sync(user="ana").changed is False


def test_sync_says_archived_for_a_line_deleted_by_hand(mem, home):
    jazz = mem.remember("Likes jazz", user="ana", category="preference")
    mem.remember("Prefers tea", user="ana", category="preference")
    path = dreamed(mem, home)
    edit_text(path, f"- [0x] Likes jazz <!-- {jazz.id} -->\n", "")
    result = cli(home, "sync", "--user", "ana")
    assert result.exit_code == 0
    assert f"archived {jazz.id} Likes jazz" in result.output and "deleted" not in result.output
    assert mem.fact(jazz.id).status == "archived"


def test_a_hard_delete_takes_the_line_out_of_memory_md_and_keeps_a_hand_edit_made_before(mem, home):
    secret = mem.remember("Sees a therapist on Tuesdays", user="ana", category="context")
    mem.remember("Likes jazz", user="ana", category="preference")
    path = dreamed(mem, home)
    edit_text(path, "Likes jazz", "Likes cool jazz")
    mem.forget(secret.id, user="ana", hard=True)
    text = path.read_text(encoding="utf-8")
    assert "therapist" not in text and "Likes cool jazz" in text
    assert [f.content for f in mem.facts(user="ana")] == ["Likes cool jazz"]


def test_a_tidy_addition_takes_a_known_category_whatever_the_engine_named(home, tidy_facts, fake_openai):
    odd = "Secret ana.secret@example.com " + "Q" * 3000
    fake_openai.respond_by_step({"tidy": {"actions": [
        {"op": "add", "content": "Likes hiking, jazz and green tea", "category": odd, "reason": "one line"}]}})
    with Memory(home, background=False, engines={"tidy": "openai"},
                llm={"base_url": fake_openai.base_url, "model": "fake-model", "max_retries": 0}) as mem:
        applied = mem.tidy(user="ana")
        assert [c.refused for c in applied.changes] == [""]
        assert applied.changes[0].category == "other"  # as the diff shows it
        [added] = [f for f in mem.facts(user="ana") if f.content == "Likes hiking, jazz and green tea"]
        assert added.category == "other" and "ana.secret@example.com" not in added.model_dump_json()
        assert "QQQQ" not in applied.model_dump_json() and "QQQQ" not in added.model_dump_json()


def test_a_line_added_under_profile_that_is_no_section_becomes_a_fact_not_lost(mem, home):
    mem.remember("Likes jazz", user="ana", category="preference")
    mem.set_profile("user.topOfMind", "Moving to Lisbon", user="ana")
    path = dreamed(mem, home)
    text = path.read_text(encoding="utf-8")
    top = next(line for line in text.splitlines() if "Moving to Lisbon" in line)
    path.write_text(text.replace(top, f"{top}\n- I am vegetarian\n- **Hobbies:** chess"), encoding="utf-8")
    report = mem.sync(user="ana")
    assert sorted(f.content for f in report.added) == ["Hobbies: chess", "I am vegetarian"]
    assert {"Hobbies: chess", "I am vegetarian"} <= {f.content for f in mem.facts(user="ana")}
    assert mem.profile(user="ana").user.top_of_mind.summary == "Moving to Lisbon"
    after = path.read_text(encoding="utf-8")
    assert "I am vegetarian" in after and "Hobbies: chess" in after  # written back, as facts now


def test_a_fact_memory_md_writes_defanged_is_not_edited_by_a_save_of_another_line(mem):
    marked = mem.remember("Uses <!-- comments --> in HTML templates", user="v", category="preference")
    mem.remember("Plain other fact about cats", user="v", category="preference")
    mem.dream(user="v", days=3)
    report = mem.save_memory_md(mem.memory_md(user="v").replace("about cats", "about dogs"), user="v")
    assert [f.content for f in report.edited] == ["Plain other fact about dogs"]
    assert mem.fact(marked.id).content == "Uses <!-- comments --> in HTML templates"


def test_restoring_a_replaced_value_takes_it_back_from_the_newer_one_and_undo_takes_both_back(bmem):
    mem = bmem
    mem.set_profile("user.personalContext", "Lives in Lisbon", user="ana")
    berlin = mem.remember("Lives in Berlin", user="ana", category="context")
    lisbon = mem.remember("Lives in Lisbon", user="ana", category="context")
    assert lisbon.supersedes == berlin.id and mem.fact(berlin.id).status == "archived"
    restored = mem.restore_fact(berlin.id, user="ana")
    assert restored.status == "consolidated" and restored.superseded_by is None and restored.archived_reason == ""
    newer = mem.fact(lisbon.id)
    assert newer.status == "archived" and newer.superseded_by == berlin.id
    assert [f.content for f in mem.facts(user="ana") if "Lives in" in f.content] == ["Lives in Berlin"]
    assert "Lisbon" not in (mem.profile(user="ana").user.personal_context.summary or "")
    change = mem.changes(user="ana")[0]
    mem.undo(change.id, user="ana")
    assert mem.fact(lisbon.id).status == "consolidated" and mem.fact(berlin.id).status == "archived"
    # a fact forgotten by hand, with no newer value, comes back alone
    tea = mem.remember("Drinks green tea", user="ana", category="preference")
    mem.forget(tea.id, user="ana")
    assert mem.restore_fact(tea.id, user="ana").status == "consolidated"
    assert mem.fact(lisbon.id).status == "consolidated"


def _keep_every_fact(body: dict) -> dict:
    """A scripted distill answer that keeps every fact it is shown."""
    shown = json.loads(next(m["content"] for m in body["messages"] if m["role"] == "user"))
    return {"entries": [{"action": "keep", "content": f["content"], "category": f["category"], "sources": [f["id"]]}
                        for f in shown["facts"]]}


def test_health_says_when_the_last_dream_failed_until_one_succeeds(home, fake_openai):

    mem = Memory(home, background=False, engines={"distill": "openai"},
                 llm={"base_url": fake_openai.base_url, "model": "fake-model", "max_retries": 0})
    try:
        mem.remember("Prefers tea over coffee", user="ana", category="preference")
        assert mem.health(user="ana").healthy
        fake_openai.respond_by_step({"distill": Reply.error(400, "model not found")})
        run = mem.dream(user="ana")
        report = mem.health(user="ana")
        assert not report.healthy and run.id in report.dream_error and "model not found" in report.dream_error
        assert any("the last dream failed" in r for r in report.reasons)
        assert mem.health(user="bob").dream_error == ""  # another user's dreams are theirs
        fake_openai.respond_by_step({"distill": _keep_every_fact})
        assert mem.dream(user="ana").status == "done"
        assert mem.health(user="ana").dream_error == ""
    finally:
        mem.close()
