"""The nightly line over days, as a person lives it: things said on one day and changed on a
later one, dreams each night, hand edits of MEMORY.md, undo. Each test names what a person
sees in MEMORY.md, the dream's report or its diary."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from reverie import Memory
from reverie.dream import describe
from tests.edits import edit_text

DAY0 = datetime(2026, 11, 16, 9, 0, tzinfo=timezone.utc)


def day(n: int, hour: int = 9) -> datetime:
    return DAY0 + timedelta(days=n, hours=hour - 9)


def say(mem: Memory, text: str, when: datetime, user: str = "ana", reply: str = "Noted.") -> None:
    mem.add([{"role": "user", "content": text}, {"role": "assistant", "content": reply}], user=user, at=when)
    mem.flush()


def night(mem: Memory, n: int, user: str = "ana", minute: int = 55):
    run = mem.dream(user=user, days=3, force=True, now=day(n, 23) + timedelta(minutes=minute - 0))
    assert run.status == "done", (run.status, run.error, (run.report or {}).get("skipped"))
    return run


def entries(mem: Memory, user: str = "ana") -> list[str]:
    """The entry lines of MEMORY.md, markers and [Nx] left out."""
    return [re.sub(r"^- \[\d+x\] | <!-- fact_\w+ -->$", "", line)
            for line in mem.memory_md(user=user).splitlines() if line.endswith("-->")]


def diary(mem: Memory, user: str = "ana") -> str:
    return "\n".join(mem.diaries(user=user).values())


def test_a_job_changed_days_later_shows_the_new_job_in_memory_md_not_neither(mem):
    say(mem, "I work as a nurse at Lisbon General Hospital.", day(0))
    night(mem, 0)
    assert entries(mem) == ["Works as a nurse at Lisbon General Hospital"]
    say(mem, "I switched jobs: I work as a data engineer at Acme now.", day(7))
    run = night(mem, 7)
    # the old job gave way when it was learned; the new one is an entry, and the report says so
    assert entries(mem) == ["Works as a data engineer at Acme now"]
    assert [(c["content"], c["replaced"]) for c in run.report["conflicts"]] == [
        ("Works as a data engineer at Acme now", ["Works as a nurse at Lisbon General Hospital"])]
    assert "“Works as a nurse at Lisbon General Hospital” conflicted with “Works as a data engineer at Acme now”" \
        in diary(mem)


def test_an_entry_that_left_memory_md_between_dreams_is_told_with_why(mem):
    porto = mem.remember("Lives in Porto", user="ana", category="identity")
    jazz = mem.remember("Likes jazz", user="ana", category="preference")
    night(mem, 0)
    assert entries(mem) == ["Likes jazz", "Lives in Porto"]
    mem.remember("Lives in Lisbon", user="ana", category="identity")  # a newer value, not by the dream
    mem.forget(jazz.id, user="ana")
    run = night(mem, 1)
    assert entries(mem) == ["Lives in Lisbon"]
    left = {e["fact_id"]: e["reason"] for e in run.report["left"]}
    assert left == {porto.id: "contradicted by a newer fact: “Lives in Lisbon”", jazz.id: "forgotten"}
    assert "2 entries left MEMORY.md since it was last written: “Likes jazz” (forgotten) and “Lives in Porto” " \
           "(contradicted by a newer fact: “Lives in Lisbon”)." in diary(mem)
    assert ", 2 left since MEMORY.md was last written;" in describe(run)


def test_a_newer_value_learned_between_dreams_is_told_once_as_the_conflict(mem):
    say(mem, "I have a dog named Rex.", day(0))
    night(mem, 0)
    say(mem, "I don't have a dog anymore.", day(8))
    run = night(mem, 8)
    assert entries(mem) == ["Doesn't have a dog anymore"]
    assert [(c["content"], c["replaced"]) for c in run.report["conflicts"]] == [
        ("Doesn't have a dog anymore", ["Has a dog named Rex"])]
    assert run.report["joined"] == [] and run.report["left"] == []
