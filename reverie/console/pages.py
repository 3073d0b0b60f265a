"""The console's pages and form posts. Each is one or two calls into :class:`reverie.Memory`
(the same calls REST makes); the console adds no logic of its own to any write.

Reads that the facade has no method for come straight from ``memory.store`` (a note by
id, the last finished dream) and API keys are managed with :mod:`reverie.keys`, as
``reverie keys`` does.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from reverie.console.web import (
    PREFIX,
    Console,
    NeedSignIn,
    View,
    check_csrf,
    local_path,
    message_of,
    status_of,
    view_of,
)
from reverie.curation import remembered
from reverie.dream import MAX_DAYS, describe
from reverie.errors import AccessDenied, Conflict, InvalidInput, NotFound, ReverieError
from reverie.inputs import clean_label
from reverie.journal import recorded
from reverie.keys import create_key, list_keys, revoke_key
from reverie.memory_md import text_sha
from reverie.models import CATEGORIES, FEEDBACK_STATUSES, PROFILE_LABELS, PROFILE_SECTIONS, Episode
from reverie.recall import RecallItem
from reverie.redact import redact
from reverie.scheduler import Scheduler
from reverie.store.base import FACT_ORDERS
from reverie.tags import normalize_tag
from reverie.text import clip_line

PAGE = 50
TAG_PAGE = 60
DIARY_PAGE = 5
FACT_STATUS_FILTERS = ("", "pending", "consolidated", "archived", "all")
EPISODE_STATUSES = ("", "completed", "interrupted", "failed", "pending")
# the parts of a recall score drawn as bars, in this order (others follow)
PART_ORDER = ("relevance", "text", "tags", "recency", "time_match", "confidence", "uses", "feedback", "scene",
              "sub_scene", "background")


def add_routes(router: APIRouter, console: Console) -> None:
    memory = console.memory

    def page(request: Request) -> View:
        return view_of(console, request)

    async def posted(request: Request) -> View:
        view = await run_in_threadpool(view_of, console, request)
        form = await request.form()
        check_csrf(view, form)
        view.form = {k: v for k, v in form.multi_items() if isinstance(v, str)}
        view.form_lists = {k: [v for v in form.getlist(k) if isinstance(v, str)] for k in form.keys()}
        request.state.console_view = view  # a refused post returns to its page with these fields
        return view

    # ------------------------------------------------------------ sign-in
    @router.get("/sign-in")
    def sign_in_page(view: View = Depends(page)) -> Response:
        if not console.auth or view.session.signed_in:
            return view.redirect(view.back(PREFIX))
        return view.render("sign_in.html", title="Sign in", next=view.back(""))

    @router.post("/sign-in")
    def sign_in(view: View = Depends(posted)) -> Response:
        if not console.auth:
            return view.redirect(PREFIX)
        try:
            view.use_session(console.sessions.sign_in(view.session, view.form.get("key")))
        except AccessDenied as exc:
            # the key typed is never shown again, nor logged
            return view.render("sign_in.html", status=401, title="Sign in", error=str(exc),
                               next=local_path(view.form.get("next")) or "")
        return view.redirect(local_path(view.form.get("next")) or PREFIX)

    @router.post("/sign-out")
    def sign_out(view: View = Depends(posted)) -> Response:
        view.use_session(console.sessions.sign_out(view.session))
        return view.redirect(f"{PREFIX}/sign-in" if console.auth else PREFIX, flash="Signed out.")

    @router.post("/user")
    def switch_user(view: View = Depends(posted)) -> Response:
        named = view.form.get("user", "").strip()
        if not named:
            raise InvalidInput("choose a user to show", field="user")
        view.use_session(console.sessions.switch(view.session, named))
        return view.redirect(local_path(view.form.get("next")) or PREFIX, flash=f"Showing {view.user}'s memory.")

    # ------------------------------------------------------------ overview
    @router.get("")
    def overview(view: View = Depends(page)) -> Response:
        user = view.user
        counts = memory.stats(user=user)["users"][user]
        waiting, error = memory.learning_backlog(user=user)
        try:
            last = memory.dream_status(user=user)
        except NotFound:
            last = None
        return view.render(
            "overview.html", title="Overview", counts=counts, health=memory.health(user=user), waiting=waiting,
            learning_error=error, last_dream=last, last_dream_text=describe(last) if last else "",
            next_dream=Scheduler(memory).next_run(), dream_time=memory.settings.dream_time,
        )

    # ------------------------------------------------------------ profile
    @router.get("/profile")
    def profile(view: View = Depends(page)) -> Response:
        sections = memory.profile(user=view.user).sections()
        rows = [{"name": name, "label": PROFILE_LABELS[name], "summary": sections[name].summary,
                 "updated_at": sections[name].updated_at} for name in PROFILE_SECTIONS]
        return view.render("profile.html", title="Profile", sections=rows, limit=memory.settings.max_profile_chars)

    @router.post("/profile")
    def edit_profile(view: View = Depends(posted)) -> Response:
        section = view.form.get("section", "")
        _, change = recorded(lambda: memory.set_profile(section, view.form.get("summary", ""), user=view.user))
        said = f"Saved {PROFILE_LABELS.get(section, section)}." if change else "Nothing changed."
        return view.redirect(f"{PREFIX}/profile#{section}", flash=said, undo=change)

    # ------------------------------------------------------------ facts
    @router.get("/facts")
    def facts(
        view: View = Depends(page), q: str = "", category: str = "", status: str = "", order: str = "uses",
        after: str = "",
    ) -> Response:
        user = view.user
        order = order or "uses"  # another is refused naming the orders, as REST's ?order= is
        if status not in FACT_STATUS_FILTERS:
            raise InvalidInput("status must be pending, consolidated, archived or all (or none: the live facts)",
                               field="status")
        q = q.strip()
        result = memory.fact_page(user=user, status=status or None, category=category or None, contains=q or None,
                                  order=order, after=after or None, limit=PAGE)
        filters = {"q": q, "category": category, "status": status, "order": order if order != "uses" else ""}
        return view.render(
            "facts.html", title="Facts", facts=result.items, next=result.next, after=after, filters=filters,
            categories=CATEGORIES, statuses=FACT_STATUS_FILTERS, orders=FACT_ORDERS,
            next_url=view.url("/facts", **filters, after=result.next) if result.next else "",
            first_url=view.url("/facts", **filters) if after else "",
        )

    @router.post("/facts")
    def remember(view: View = Depends(posted)) -> Response:
        user = view.user
        category = view.form.get("category") or "other"
        fact, outcome = remembered(lambda: memory.remember(view.form.get("content", ""), user=user, category=category))
        if outcome == "reinforced":
            said = (f"Already known: reinforced “{_short(fact.content)}” (now [{fact.uses}x]); the wording you typed "
                    "was not kept" + (f", and the fact stays {fact.category}" if fact.category != category.strip().lower()
                                      else "") + ".")
        elif outcome == "superseded" and fact.supersedes:
            older = _or_none(lambda: memory.fact(fact.supersedes or "", user=user))
            said = (f"Remembered; it replaces “{_short(older.content)}” (archived)." if older is not None
                    else "Remembered; it replaces an older fact (archived).")
        else:
            said = "Remembered."
        return view.redirect(f"{PREFIX}/facts/{fact.id}", flash=said)

    @router.post("/facts/archive")
    def bulk_archive(view: View = Depends(posted)) -> Response:
        user = view.user
        ids = list(dict.fromkeys(view.form_lists.get("ids", [])))
        if not ids:
            raise InvalidInput("choose the facts to archive first", field="ids")
        chosen = [memory.fact(i, user=user) for i in ids]
        if view.form.get("confirm") != "yes":
            return view.render("confirm_archive.html", title="Archive facts", facts=chosen,
                               back=local_path(view.form.get("next")) or f"{PREFIX}/facts")
        live = [fact for fact in chosen if fact.status != "archived"]
        for fact in live:
            memory.forget(fact.id, user=user)
        already = len(chosen) - len(live)
        if not live:
            said = (f"Nothing archived: {'all ' if already > 1 else ''}{_count(already, 'fact')} "
                    f"{'was' if already == 1 else 'were'} archived already.")
        else:
            said = (f"Archived {_count(len(live), 'fact')}"
                    + (f" ({already} {'was' if already == 1 else 'were'} archived already)" if already else "")
                    + "; restore any of them from the Archived filter.")
        return view.redirect(local_path(view.form.get("next")) or f"{PREFIX}/facts", flash=said)

    @router.get("/facts/{fact_id}")
    def fact(fact_id: str, view: View = Depends(page)) -> Response:
        user = view.user
        item = memory.fact(fact_id, user=user)
        episodes = [_or_none(lambda i=i: memory.episode(i, user=user)) for i in item.provenance.episodes]
        notes = memory.store.get_notes(item.provenance.notes)
        related = {i: _or_none(lambda i=i: memory.fact(i, user=user))
                   for i in (item.supersedes, item.superseded_by, *item.provenance.facts) if i}
        return view.render(
            "fact.html", title="Fact", fact=item, episodes=[e for e in episodes if e is not None],
            missing_episodes=[i for i, e in zip(item.provenance.episodes, episodes) if e is None],
            notes=[n for n in notes.values() if n.user == user], related=related, categories=CATEGORIES,
            feedback=FEEDBACK_STATUSES,
        )

    @router.post("/facts/{fact_id}")
    def edit_fact(fact_id: str, view: View = Depends(posted)) -> Response:
        changes: dict[str, Any] = {}
        for name in ("content", "category", "area"):
            if view.form.get(name):
                changes[name] = view.form[name]
        if view.form.get("confidence"):
            try:
                changes["confidence"] = float(view.form["confidence"])
            except ValueError:
                raise InvalidInput("confidence must be a number from 0 to 1", field="confidence") from None
        _, change = recorded(lambda: memory.update_fact(fact_id, user=view.user, **changes))
        return view.redirect(f"{PREFIX}/facts/{fact_id}", flash="Saved." if change else "Nothing changed.", undo=change)

    @router.post("/facts/{fact_id}/forget")
    def forget(fact_id: str, view: View = Depends(posted)) -> Response:
        back = view.back(f"{PREFIX}/facts/{fact_id}")
        fact = memory.fact(fact_id, user=view.user)
        if fact.status == "archived":
            return view.redirect(back, flash=f"“{_short(fact.content)}” was archived already: nothing changed.")
        fact = memory.forget(fact_id, user=view.user)
        return view.redirect(back, flash=f"Forgot “{_short(fact.content)}” (archived: Restore brings it back).")

    @router.post("/facts/{fact_id}/restore")
    def restore(fact_id: str, view: View = Depends(posted)) -> Response:
        back = view.back(f"{PREFIX}/facts/{fact_id}")
        fact = memory.fact(fact_id, user=view.user)
        if fact.status != "archived":
            return view.redirect(back, flash=f"“{_short(fact.content)}” is {fact.status}, not archived: nothing to "
                                             "restore.")
        fact, change = recorded(lambda: memory.restore_fact(fact_id, user=view.user))
        return view.redirect(back, flash=f"Restored “{_short(fact.content)}” ({fact.status}).", undo=change)

    @router.post("/facts/{fact_id}/confirm")
    def confirm(fact_id: str, view: View = Depends(posted)) -> Response:
        fact = memory.reinforce(fact_id, user=view.user)
        return view.redirect(view.back(f"{PREFIX}/facts/{fact_id}"),
                             flash=f"Confirmed “{_short(fact.content)}”: now [{fact.uses}x].")

    # ------------------------------------------------------------ timeline and episodes
    @router.get("/timeline")
    def timeline(
        view: View = Depends(page), thread: str = "", status: str = "", until: str = "", archived: str = "",
        after: str = "",
    ) -> Response:
        user = view.user
        end = _day_end(until) if until else None
        result = memory.episode_page(user=user, thread=thread or None, status=status or None, until=end,
                                     archived=None if archived else False, after=after or None, limit=PAGE)
        days: dict[str, list[Episode]] = {}
        for ep in result.items:
            days.setdefault(ep.occurred_at.astimezone(timezone.utc).date().isoformat(), []).append(ep)
        filters = {"thread": thread, "status": status, "until": until, "archived": archived}
        return view.render(
            "timeline.html", title="Timeline", days=days, filters=filters, statuses=EPISODE_STATUSES,
            threads=_threads(memory, user, thread), feedback=FEEDBACK_STATUSES,
            next_url=view.url("/timeline", **filters, after=result.next) if result.next else "",
            first_url=view.url("/timeline", **filters) if after else "",
        )

    @router.get("/episodes/{episode_id}")
    def episode(episode_id: str, view: View = Depends(page)) -> Response:
        ep = memory.episode(episode_id, user=view.user)
        return view.render("episode.html", title="Episode", ep=ep, feedback=FEEDBACK_STATUSES)

    @router.post("/episodes/{episode_id}/feedback")
    def feedback(episode_id: str, view: View = Depends(posted)) -> Response:
        status = view.form.get("status", "")
        memory.feedback(episode_id, status, reason=view.form.get("reason", ""), user=view.user)
        return view.redirect(view.back(f"{PREFIX}/episodes/{episode_id}"), flash=f"Feedback saved: {status}.")

    @router.post("/episodes/{episode_id}/restore")
    def restore_episode(episode_id: str, view: View = Depends(posted)) -> Response:
        back = view.back(f"{PREFIX}/episodes/{episode_id}")
        if not memory.episode(episode_id, user=view.user).archived:
            return view.redirect(back, flash="This episode is not archived: nothing to restore.")
        memory.restore(episode_id, user=view.user)
        return view.redirect(back, flash="Episode restored.")

    # ------------------------------------------------------------ notes and MEMORY.md
    @router.get("/notes")
    def notes(view: View = Depends(page), date: str = "", after: str = "") -> Response:
        result = memory.note_page(user=view.user, date=date or None, after=after or None, limit=100)
        days: dict[str, list[Any]] = {}
        for note in result.items:
            days.setdefault(note.date, []).append(note)
        return view.render(
            "notes.html", title="Daily notes", days=days, date=date,
            next_url=view.url("/notes", date=date, after=result.next) if result.next else "",
            first_url=view.url("/notes", date=date) if after else "",
        )

    def memory_page(view: View, *, typed: str | None = None, base: str | None = None, error: str = "",
                    conflict: bool = False, status: int = 200) -> Response:
        """The MEMORY.md page; after a refused save, ``typed`` (the text sent, redacted as saving
        it would have: no secret typed there is sent back) stays in the editor."""
        user = view.user
        typed = redact(typed) if typed is not None else None
        text = memory.memory_md(user=user)
        last = memory.store.last_dream_run(user, status="done")
        report = (last.report or {}) if last else {}
        undone = any(c.id == report.get("journal") and c.undone_at for c in memory.changes(user=user, limit=100))
        current_base = text_sha(text) if text else ""
        return view.render(
            "memory_md.html", status=status, title="MEMORY.md", text=text or memory.memory_md_view(user=user),
            exists=bool(text), base=current_base if base is None else base, last_dream=last, report=report,
            undone=undone, typed=typed, error=error, conflict=conflict, current=text,
        )

    @router.get("/memory")
    def memory_md(view: View = Depends(page)) -> Response:
        return memory_page(view)

    @router.post("/memory")
    def save_memory_md(view: View = Depends(posted)) -> Response:
        typed = view.form.get("text", "")
        try:
            report = memory.save_memory_md(typed, user=view.user, base=view.form.get("base") or None)
        except Conflict as exc:
            if not memory.memory_md(user=view.user):
                # no MEMORY.md at all (none yet, or the user's memory was deleted meanwhile): say
                # so, not that it changed, which offered a save that could only be refused again
                return memory_page(view, typed=typed, base="", status=status_of(exc), error=(
                    f"{message_of(exc)} (Dreams, Dream now). Nothing was saved; your text is kept in the "
                    "editor below."))
            # edited elsewhere meanwhile: nothing was written. The page answers at once (a text of
            # any length), the text sent kept in the editor beside what MEMORY.md holds now; a
            # save from here starts from that version (and replaces it with this text)
            return memory_page(view, typed=typed, conflict=True, status=status_of(exc), error=(
                "MEMORY.md changed since this edit began (a dream, or an edit in another tab): nothing was saved. Your text is kept in the editor below, and what MEMORY.md "
                "holds now is shown beside it: compare them, then save your text to replace that version, or "
                "reload the page to start again from it."))
        except InvalidInput as exc:
            return memory_page(view, typed=typed, base=view.form.get("base", ""), status=status_of(exc),
                               error=f"{message_of(exc)} Nothing was saved; your text is kept in the editor below.")
        said = (f"{len(report.edited)} edited, {len(report.added)} added, {len(report.deleted)} archived"
                + (f", {len(report.superseded)} archived by a new line that took its place: "
                   + " / ".join(clip_line(f.content, 80) for f in report.superseded) if report.superseded else "")
                + (f", {len(report.duplicates)} already known, merged into the entry they repeat: "
                   + " / ".join(clip_line(d.content, 80) for d in report.duplicates) if report.duplicates else "")
                + (f", {len(report.moved)} under another heading: "
                   + " / ".join(f"{clip_line(m.content, 80)} (to {m.to}{': ' + m.why if m.why else ''})"
                                for m in report.moved) if report.moved else "")
                + ("".join(f", profile line {p.label} {p.change}" for p in report.profile_lines))
                + (f"; {len(report.refused)} line(s) not taken in: "
                   + " / ".join(f"{clip_line(r.content, 80)} ({r.reason.split(':')[0]})" for r in report.refused)
                   if report.refused else ""))
        return view.redirect(f"{PREFIX}/memory", flash=f"Saved and synced: {said}." if report.changed
                             else "Saved; nothing changed.", undo=report.journal)

    # ------------------------------------------------------------ dreams and changes
    @router.get("/dreams")
    def dreams(view: View = Depends(page), run: str = "", before: str = "", after: str = "") -> Response:
        user = view.user
        current = None
        if run:
            current = memory.dream_status(run, user=user)
        else:
            latest = _or_none(lambda: memory.dream_status(user=user))
            if latest is not None and latest.status in ("queued", "running"):
                current = latest
        try:
            diaries = memory.diary_page(user=user, after=before or None, limit=DIARY_PAGE)
        except InvalidInput as exc:  # the page's own name for the diaries' cursor
            raise InvalidInput(str(exc).replace("after ", "before ", 1), field="before") from exc
        changes = memory.change_page(user=user, after=after or None, limit=PAGE)
        return view.render(
            "dreams.html", title="Dreams", run=current, run_text=describe(current) if current else "",
            diaries=diaries.items, max_days=MAX_DAYS, days=memory.settings.dream_days,
            older_diaries=view.url("/dreams", before=diaries.next) if diaries.next else "",
            newest_diaries=view.url("/dreams") if before else "", changes=changes.items,
            next_changes=view.url("/dreams", before=before, after=changes.next) if changes.next else "",
        )

    @router.post("/dreams")
    def dream_now(view: View = Depends(posted)) -> Response:
        try:
            days = int(view.form.get("days") or memory.settings.dream_days)
        except ValueError:
            raise InvalidInput(f"days must be a whole number from 1 to {MAX_DAYS}", field="days") from None
        run = memory.dream(user=view.user, days=days, background=True)
        return view.redirect(view.url("/dreams", run=run.id), flash=f"Dreaming over the last {days} day(s)…")

    @router.get("/dreams/runs/{run_id}")
    def dream_run(run_id: str, request: Request) -> Response:
        # a JSON answer, errors included: the page's script reads it
        try:
            view = view_of(console, request)
            run = memory.dream_status(run_id, user=view.user)
        except NeedSignIn:
            return JSONResponse({"error": "signed out: sign in again to follow the dream"}, status_code=401)
        except ReverieError as exc:
            return JSONResponse({"error": message_of(exc)}, status_code=status_of(exc))
        body = {"id": run.id, "status": run.status, "text": describe(run),
                "done": run.status not in ("queued", "running")}
        return view.finish(JSONResponse(body))

    @router.post("/changes/{change_id}/undo")
    def undo(change_id: str, view: View = Depends(posted)) -> Response:
        report = memory.undo(change_id, user=view.user)
        return view.redirect(view.back(f"{PREFIX}/dreams"),
                             flash=f"Undid the {report.action} {change_id}: {report.restored} restored, "
                                   f"{report.archived} archived.")

    # ------------------------------------------------------------ tags
    @router.get("/tags")
    def tags(view: View = Depends(page), status: str = "", after: str = "") -> Response:
        result = memory.tag_page(user=view.user, status=status or None, after=after or None, limit=TAG_PAGE)
        return view.render(
            "tags.html", title="Tags", tags=result.items, status_filter=status, graph=tag_graph(result.items),
            statuses=("", "unexamined", "active", "deprecated", "merged"),
            next_url=view.url("/tags", status=status, after=result.next) if result.next else "",
            first_url=view.url("/tags", status=status) if after else "",
        )

    @router.post("/tags/merge")
    def merge(view: View = Depends(posted)) -> Response:
        old, new = view.form.get("old", "").strip(), view.form.get("new", "").strip()
        moved, change = recorded(lambda: memory.merge_tags(old, new, user=view.user))
        # the names the tags really have ("HELIX" is the tag helix), read back after the merge
        merged = memory.store.get_tags(view.user, [normalize_tag(old)]).get(normalize_tag(old))
        source = merged.name if merged is not None else normalize_tag(old)
        target = (merged.merged_to if merged is not None else None) or normalize_tag(new)
        return view.redirect(view.back(f"{PREFIX}/tags"),
                             flash=f"Merged “{source}” into “{target}”: {moved} item(s) moved.", undo=change)

    @router.post("/tags/status")
    def tag_status(view: View = Depends(posted)) -> Response:
        tag, change = recorded(
            lambda: memory.set_tag_status(view.form.get("name", ""), view.form.get("status", ""), user=view.user))
        said = f"“{tag.name}” is now {tag.status}." if change else f"“{tag.name}” was {tag.status} already: nothing changed."
        return view.redirect(view.back(f"{PREFIX}/tags"), flash=said, undo=change)

    # ------------------------------------------------------------ recall playground
    @router.get("/recall")
    def recall(
        view: View = Depends(page), message: str = "", thread: str = "", budget: str = "", at: str = "",
    ) -> Response:
        user = view.user
        result = None
        if message.strip():
            try:
                tokens = int(budget) if budget else None
            except ValueError:
                raise InvalidInput("budget must be a whole number of tokens", field="budget") from None
            # track=False: the playground never counts as a use of what it shows
            try:
                moment = datetime.fromisoformat(at) if at else None
            except ValueError:
                raise InvalidInput("time must be a date and time such as 2024-05-01T09:30", field="at") from None
            result = memory.recall(message, user=user, budget=tokens, thread=thread or None, at=moment,
                                   explain=True, track=False)
        return view.render(
            "recall.html", title="Recall playground", result=result, message=message, thread=thread, budget=budget,
            at=at, default_budget=memory.settings.budget, bars=[score_bars(i) for i in result.items] if result else [],
            threads=_threads(memory, user, thread),
        )

    # ------------------------------------------------------------ keys (admin keys only)
    def admin(view: View) -> None:
        if console.auth and not view.session.admin:
            raise AccessDenied("only an admin key manages keys", status=403)

    @router.get("/keys")
    def keys(view: View = Depends(page)) -> Response:
        view.user  # noqa: B018 - signed in first
        admin(view)
        return view.render("keys.html", title="API keys", keys=list_keys(memory.store)[::-1], created=None)

    @router.post("/keys")
    def new_key(view: View = Depends(posted)) -> Response:
        admin(view)
        made = create_key(memory.store, user=view.form.get("user", "").strip() or view.user,
                          name=clean_label(view.form.get("name", ""), "name"), admin=view.form.get("admin") == "yes")
        # shown once, in this answer only (never in a URL, a cookie or a log)
        return view.render("keys.html", title="API keys", keys=list_keys(memory.store)[::-1], created=made)

    @router.post("/keys/{key_id}/revoke")
    def revoke(key_id: str, view: View = Depends(posted)) -> Response:
        admin(view)
        key = revoke_key(memory.store, key_id)
        return view.redirect(f"{PREFIX}/keys", flash=f"Revoked {key.id} ({key.user}).")


# ------------------------------------------------------------ helpers
def _threads(memory: Any, user: str, chosen: str) -> list[str]:
    """The threads a filter offers: the user's most recently active, and the one chosen."""
    threads = memory.threads(user=user)
    return threads if not chosen or chosen in threads else [chosen, *threads]


def _or_none(read: Any) -> Any:
    try:
        return read()
    except NotFound:
        return None


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _day_end(day: str) -> datetime:
    try:
        return datetime.fromisoformat(f"{day}T23:59:59.999999+00:00")
    except ValueError:
        raise InvalidInput("until must be a date written YYYY-MM-DD", field="until") from None


def score_bars(item: RecallItem) -> list[dict[str, Any]]:
    """An item's score parts as bars: each part's value and a width from 0 to 1 (uses, a
    count, on a log scale; a boost such as feedback as its excess over 1)."""
    names = [p for p in PART_ORDER if p in item.parts] + sorted(p for p in item.parts if p not in PART_ORDER)
    bars = []
    for name in names:
        value = float(item.parts[name])
        if name == "uses":
            width = min(1.0, math.log1p(max(value, 0.0)) / math.log1p(20))
        elif name == "feedback":
            width = min(1.0, max(0.0, value - 1.0) / 0.5)
        else:
            width = min(1.0, max(0.0, value))
        bars.append({"name": name, "value": value, "width": width})
    return bars


def tag_graph(tags: list[dict[str, Any]], limit: int = 36) -> dict[str, Any]:
    """The relations among a page of tags as a graph laid out on a circle: nodes with x, y and
    edges with their level (synonym / related / loose)."""
    names: list[str] = []
    edges: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for tag in tags:
        for rel in tag["relations"]:
            pair = tuple(sorted((tag["name"], rel["target"])))
            if pair in seen:
                continue
            for name in pair:
                if name not in names and len(names) < limit:
                    names.append(name)
            if pair[0] in names and pair[1] in names:
                seen.add((pair[0], pair[1]))
                edges.append({"source": pair[0], "target": pair[1], "level": rel["level"]})
    size, radius = 360, 125
    nodes = {}
    for n, name in enumerate(names):
        angle = 2 * math.pi * n / max(len(names), 1) - math.pi / 2
        x, y = size / 2 + radius * math.cos(angle), size / 2 + radius * math.sin(angle)
        nodes[name] = {"name": name, "x": round(x, 1), "y": round(y, 1),
                       "anchor": "start" if math.cos(angle) > 0.2 else "end" if math.cos(angle) < -0.2 else "middle"}
    lines = [{**e, "x1": nodes[e["source"]]["x"], "y1": nodes[e["source"]]["y"], "x2": nodes[e["target"]]["x"],
              "y2": nodes[e["target"]]["y"]} for e in edges]
    return {"size": size, "nodes": list(nodes.values()), "edges": lines}
