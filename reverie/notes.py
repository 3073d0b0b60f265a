"""Daily notes: the markdown view of each day beside the database.

The store is the truth; ``<home>/users/<user>/memory/YYYY-MM-DD.md`` mirrors it
so a person can read a day at a glance.
"""

from __future__ import annotations

from typing import Iterable

from reverie.files import UserFiles
from reverie.store import Store


def render_day(date: str, lines: Iterable[str]) -> str:
    body = "\n".join(f"- {line}" for line in lines)
    return f"# {date}\n\n{body}\n"


def mirror_notes(store: Store, files: UserFiles, user: str, dates: Iterable[str]) -> None:
    """Rewrite the markdown file of each given day from the store."""
    for date in sorted(set(dates)):
        notes = store.list_notes(user, since=date, until=date)
        if notes:
            # the store holds the notes; a lost file is written again on the next flush
            files.write(user, files.notes_file(user, date), render_day(date, (n.content for n in notes)), durable=False)
