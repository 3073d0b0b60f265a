"""The home's file layout, and the one way reverie writes a file.

    <home>/reverie.db
    <home>/users/<user>/MEMORY.md
    <home>/users/<user>/memory/YYYY-MM-DD.md
    <home>/users/<user>/memory/dreams/YYYY-MM-DD.md

``<user>`` is the user id, unless a file system that ignores case or Unicode
normalization (macOS and Windows by default) could take it for another id's folder
("Ana" and "ana"): see :func:`folder_name`.

With a shared store (PostgreSQL, served by several replicas) the documents live in
the store instead, under the same names relative to the user's folder ("MEMORY.md",
"memory/dreams/2024-05-01.md"), so that any replica reads and edits them; the daily
notes are rows of the store already. A ``mirror`` folder, if set, also gets every
document and the daily-note views as files, in the same layout.

Every value that becomes part of a path is checked where it enters (a user id
from the safe alphabet of :mod:`reverie.inputs`, a real ``YYYY-MM-DD`` date),
and every write goes through :meth:`UserFiles.write`, which resolves the final
path and refuses anything outside that user's folder. Files are written
atomically (temp file + rename): a crash never leaves half a file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import unicodedata
from pathlib import Path

from reverie.errors import Conflict, InvalidInput
from reverie.inputs import check_date, check_user
from reverie.store.base import Store


# the home's folders follow folder_name (an older home is renamed once, when it is opened)
LAYOUT_META = "files.layout"
LAYOUT = "4"
# names Windows keeps for devices, whatever follows a dot ("con", "nul.txt"; "com¹" too)
_DEVICE_NAMES = frozenset({"con", "prn", "aux", "nul", *(f"{p}{n}" for p in ("com", "lpt") for n in "123456789¹²³")})
# a folder name's bytes at most (file systems allow 255; the digest's 9 follow a shortened form)
_NAME_BYTES = 200


def folder_name(user: str) -> str:
    """The name of ``user``'s folder: the id itself when it is its own case-folded NFC form
    ("ana", "张三"); otherwise that form, ``+`` and 8 hex of the id's digest ("Ana" ->
    "ana+dea210f0"). On a file system that ignores case or normalization, "Ana" and "ana"
    would otherwise be one folder, and one user's MEMORY.md another's. So too an id that ends
    with a dot (Windows drops it: "ana." would be "ana") or names a device there ("con",
    "nul.x"). ``+`` is no user-id character, so no id's own folder has such a name. An id
    whose name would pass :data:`_NAME_BYTES` (64 characters of four bytes each, or ones that
    case-fold into several) keeps the start of that form that fits, and the digest."""
    user = check_user(user)
    plain = unicodedata.normalize("NFC", user).casefold()
    if (plain == user and not user.endswith(".") and user.split(".")[0] not in _DEVICE_NAMES
            and len(user.encode("utf-8")) <= _NAME_BYTES):
        return user
    plain = plain.encode("utf-8")[:_NAME_BYTES].decode("utf-8", errors="ignore")  # whole characters
    return f"{plain}+{hashlib.sha256(user.encode('utf-8')).hexdigest()[:8]}"


class UserFiles:
    """Where each user's markdown documents and views live: files under one home, or with a
    ``store`` (a shared one) documents in the store and files only in the ``mirror`` folder."""

    def __init__(self, home: str | Path, *, store: Store | None = None, mirror: str | Path | None = None):
        self.store = store
        self.mirror = Path(mirror) if mirror is not None and store is not None else None
        self.home = self.mirror or Path(home)

    def user_dir(self, user: str) -> Path:
        return self.home / "users" / folder_name(user)

    def upgrade_layout(self, store: Store) -> int:
        """Rename the folders an older reverie named by the id itself to :func:`folder_name`'s
        names, once per home (marked in ``store``); returns how many were renamed."""
        if not self.keeps_views or store.get_meta(LAYOUT_META) == LAYOUT:
            return 0
        moved = 0
        users = self.home / "users"
        for folder in sorted(users.iterdir()) if users.is_dir() else []:
            try:
                target = users / folder_name(folder.name)
            except InvalidInput:
                continue  # not a user's folder of the old layout
            if target.name != folder.name and folder.is_dir() and not folder.is_symlink() and not target.exists():
                folder.rename(target)
                moved += 1
        with store.transaction():
            store.set_meta(LAYOUT_META, LAYOUT)
        return moved

    def memory_md(self, user: str) -> Path:
        return self.user_dir(user) / "MEMORY.md"

    def notes_dir(self, user: str) -> Path:
        return self.user_dir(user) / "memory"

    def notes_file(self, user: str, date: str) -> Path:
        return self.notes_dir(user) / f"{check_date(date)}.md"

    def diary_dir(self, user: str) -> Path:
        return self.notes_dir(user) / "dreams"

    def diary_file(self, user: str, date: str) -> Path:
        return self.diary_dir(user) / f"{check_date(date)}.md"

    def confine(self, user: str, path: Path) -> Path:
        """``path`` resolved, if it lies inside ``user``'s folder; InvalidInput otherwise."""
        root = self.user_dir(user).resolve()
        final = Path(path).resolve()
        if final == root or root not in final.parents:
            raise InvalidInput(f"refusing to write {path.name!r} outside the folder of user {user!r}", field="path")
        return final

    @property
    def keeps_views(self) -> bool:
        """Whether views the store can always render again (the daily notes) go to files."""
        return self.store is None or self.mirror is not None

    def name(self, user: str, path: Path) -> str:
        """A path in ``user``'s folder as the name its document has in a store."""
        return self.confine(user, path).relative_to(self.user_dir(user).resolve()).as_posix()

    def remove_view(self, user: str, path: Path) -> bool:
        """Delete a view file the store renders (a day's notes file left with no line), inside
        ``user``'s folder; whether there was one. A shared store without a mirror has none."""
        if not self.keeps_views:
            return False
        final = self.confine(user, path)
        if not final.is_file() or final.is_symlink():
            return False
        final.unlink()
        if self.store is not None:
            _written_mark(final).unlink(missing_ok=True)
        return True

    def remove_user(self, user: str) -> int:
        """Delete the user's folder (MEMORY.md, notes, diaries; the mirror's, with a store);
        returns files removed."""
        if self.store is not None and self.mirror is None:
            return 0
        return remove_tree(self.user_dir(user))

    def read(self, user: str, path: Path) -> str | None:
        """The text of a document in ``user``'s folder, or None when there is none."""
        if self.store is not None:
            return self.store.get_document(user, self.name(user, path))
        final = self.confine(user, path)
        return read_text(final) if final.is_file() else None

    def read_edit(self, user: str, path: Path) -> str | None:
        """The document as a person may have edited it: with a store, the mirror's file when
        it differs from the stored text (edited by hand), else the stored text. A mirror file
        that is stale or gone is written again; one edited from an outdated version is a
        Conflict."""
        stored = self.read(user, path)
        if self.store is not None and self.mirror is not None:
            final = self.confine(user, path)
            if final.is_file():
                text = read_text(final)
                written = _read_or_none(_written_mark(final))
                if text == stored or _sha(text) == written:
                    # a mirror holding what this folder was last written is stale, not edited
                    # (another replica may have written the store since): brought up to date
                    if stored is not None and text != stored:
                        self.write(user, path, stored, durable=False)
                    return stored
                if written is not None and stored is not None and written != _sha(stored):
                    # edited by hand, but from a version the store has replaced since: read
                    # against the newer one, the edit would take back what replaced it
                    raise Conflict(
                        f"{final} was edited, but it was written before the store's current version (another "
                        "process wrote it since): nothing was taken in and the file is left as it is. Move it "
                        "aside (the next sync writes the current version there) and make the edit again on "
                        "that, or in the console")
                return text
            if stored is not None:  # a mirror's file that is gone is written again
                self.write(user, path, stored, durable=False)
        return stored

    def exists(self, user: str, path: Path) -> bool:
        return self.read(user, path) is not None if self.store is not None else self.confine(user, path).is_file()

    def listing(self, user: str, folder: Path, suffix: str = ".md") -> list[Path]:
        """The documents directly in ``folder`` (of ``user``'s folder) whose names end with
        ``suffix``, sorted."""
        if self.store is None:
            final = self.confine(user, folder / "x").parent
            return sorted(p for p in final.glob(f"*{suffix}") if p.is_file()) if final.is_dir() else []
        prefix = self.name(user, folder / "x")[:-1]
        names = self.store.list_documents(user, prefix)
        return [self.user_dir(user) / n for n in names if n.endswith(suffix) and "/" not in n[len(prefix):]]

    def write(self, user: str, path: Path, text: str, *, durable: bool = True) -> Path:
        """Write ``text`` to ``path`` inside ``user``'s folder, atomically. ``durable=False``
        marks a view the store can always render again: no fsync, and with a store it goes
        only to the mirror (if any)."""
        final = self.confine(user, path)
        if self.store is not None:
            if durable:
                self.store.put_document(user, self.name(user, path), text)
            if self.mirror is None:
                return path
        write_atomic(final, text, durable=durable)
        if self.store is not None:  # a mirror: remember what was written, to tell a hand edit from it
            write_atomic(_written_mark(final), _sha(text), durable=False)
        return path


def read_text(path: Path) -> str:
    """A document a person may have saved with another editor: UTF-8 (a byte order mark is
    dropped), or UTF-16 with its byte order mark (what some editors call "Unicode"); any
    other encoding is refused, naming the file, rather than read as the wrong characters."""
    raw = path.read_bytes()
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return raw.decode("utf-16").replace("\r\n", "\n")
        except UnicodeDecodeError:
            pass
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{path} is not UTF-8 text (byte {exc.start} cannot be read): save it as UTF-8, or move it aside to "
            "have it written again from the store"
        ) from exc


def _written_mark(final: Path) -> Path:
    """Beside a mirrored document, the digest of the text last written to it."""
    return final.with_name(f".{final.name}.written")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _read_or_none(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def remove_tree(root: Path) -> int:
    """Delete a folder and everything in it (links inside are removed, never followed; a
    folder that is itself a link is left alone); returns how many files went."""
    if not root.is_dir() or root.is_symlink():
        return 0
    files = sum(len(names) for _, _, names in os.walk(root))
    shutil.rmtree(root)
    return files


def private_dirs(folder: Path) -> None:
    """``folder`` and each folder above it that is missing, made as their owner's alone (0700:
    ``mkdir(parents=True)`` gives those above the umask's default)."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    for made in reversed(missing):
        made.mkdir(mode=0o700, exist_ok=True)


def write_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """Temp file + rename: readers see the old file or the new one, never half of one. A
    folder it makes is its owner's alone (0700), as the file is (mkstemp's 0600)."""
    private_dirs(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
