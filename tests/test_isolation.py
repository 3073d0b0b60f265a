"""Issue 9.1: a value that becomes part of a path can never reach another user's folder.

The traversal payloads go in through every door (Python API, REST, MCP, CLI
import); each is refused with an error naming the field, and nothing is written
anywhere: the home and its parent are scanned before and after.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from reverie import InvalidInput, Memory
from reverie.cli import app as cli
from reverie.files import UserFiles
from reverie.inputs import check_user
from reverie.keys import create_key
from reverie.server import create_app
from tests.live_server import live_server

TRAVERSAL_NOTES = [
    "../../bob/MEMORY",
    "../bob/memory/2024-01-01",
    "../../../outside",
    "/tmp/evil",
    "2024-01-01/../../x",
    "2024-02-30",
    "2024-1-1",
    "",
]
BAD_USERS = ["..", ".", "../bob", "a/b", "a\\b", "bob\x00", ".hidden", "x" * 65, "tab\there", "-", "_"]


def envelope(date: str) -> dict:
    return {"version": 1, "notes": [{"date": date, "content": "- **Thinking Style:** forged"}]}


def snapshot(root: Path) -> dict[str, str]:
    """Every file under root with a hash of its content; a database by what it holds (its
    rows, read through SQLite), since a checkpoint moves pages between the log and the file
    at any time without changing a row (the log and the shared-memory index left out)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.name.endswith(("-shm", "-wal")):
            continue
        if path.suffix == ".db":
            conn = sqlite3.connect(path)
            try:
                content = "\n".join(conn.iterdump()).encode()
            finally:
                conn.close()
        else:
            content = path.read_bytes()
        out[str(path.relative_to(root))] = hashlib.sha256(content).hexdigest()
    return out


@pytest.fixture
def world(tmp_path):
    """A home where bob already has a MEMORY.md (after a dream), beside an unrelated folder."""
    (tmp_path / "neighbour").mkdir()
    (tmp_path / "neighbour" / "keep.txt").write_text("keep", encoding="utf-8")
    memory = Memory(tmp_path / "home", background=False)
    memory.remember("Prefers tea over coffee", user="bob", category="preference")
    memory.dream(user="bob", days=1)
    assert memory.memory_md(user="bob")
    yield tmp_path, memory
    memory.close()


@pytest.mark.parametrize("date", TRAVERSAL_NOTES)
def test_python_import_refuses_a_note_date_that_is_not_a_day(world, date):
    root, memory = world
    before = snapshot(root)
    with pytest.raises(InvalidInput) as err:
        memory.import_(envelope(date), user="ana")
    assert err.value.field == "notes[0].date"
    assert snapshot(root) == before
    assert memory.notes(user="ana") == []


@pytest.mark.parametrize("user", BAD_USERS)
def test_python_api_refuses_user_ids_outside_the_safe_alphabet(world, user):
    root, memory = world
    before = snapshot(root)
    for call in (
        lambda: memory.remember("Likes tea", user=user),
        lambda: memory.import_(envelope("2024-01-01"), user=user),
        lambda: memory.dream(user=user, days=1),
        lambda: memory.trim(["I moved to Lisbon"], user=user),
        lambda: memory.recall("tea", user=user),
    ):
        with pytest.raises(InvalidInput) as err:
            call()
        assert err.value.field == "user"
    assert snapshot(root) == before


def test_user_ids_of_any_script_with_dots_and_dashes_are_fine():
    for name in ("ana", "Ana.Lopez", "li-wei_2", "李雷", "locomo-26", "x" * 64):
        assert check_user(name) == name


@pytest.mark.parametrize("date", ["../x", "2024-13-01", "2024-02-30", "20240101"])
def test_dates_named_by_readers_are_real_days(world, date):
    _, memory = world
    with pytest.raises(InvalidInput):
        memory.diaries(user="bob", date=date)
    with pytest.raises(InvalidInput):
        memory.notes(user="bob", date=date)


def test_the_file_helper_refuses_paths_outside_the_users_folder(tmp_path):
    files = UserFiles(tmp_path / "home")
    for target in (
        files.user_dir("bob") / "MEMORY.md",
        files.user_dir("ana") / ".." / "bob" / "MEMORY.md",
        tmp_path / "outside.md",
        files.user_dir("ana"),
    ):
        with pytest.raises(InvalidInput):
            files.write("ana", target, "x")
    assert not any(p.is_file() for p in tmp_path.rglob("*"))
    assert files.write("ana", files.memory_md("ana"), "mine") == files.memory_md("ana")


def test_a_symlink_out_of_the_users_folder_is_not_followed(tmp_path):
    files = UserFiles(tmp_path / "home")
    outside = tmp_path / "outside"
    outside.mkdir()
    files.user_dir("ana").mkdir(parents=True)
    os.symlink(outside, files.notes_dir("ana"))
    with pytest.raises(InvalidInput):
        files.write("ana", files.notes_file("ana", "2024-01-01"), "x")
    assert list(outside.iterdir()) == []


# ------------------------------------------------------------ REST and MCP
@pytest.fixture
def server(world):
    root, memory = world
    keys = {"ana": create_key(memory.store, user="ana").secret,
            "admin": create_key(memory.store, user="ops", admin=True).secret}
    with live_server(create_app(memory)) as url:
        yield root, memory, url, keys


def test_rest_import_with_a_traversal_date_is_a_400_and_writes_nothing(server):
    root, memory, url, keys = server
    before = snapshot(root)
    for date in TRAVERSAL_NOTES:
        r = httpx.post(f"{url}/api/memory/import", json=envelope(date),
                       headers={"Authorization": f"Bearer {keys['ana']}"})
        assert r.status_code == 400, r.text
        assert r.json()["field"] == "notes[0].date"
    assert snapshot(root) == before
    assert "forged" not in memory.memory_md(user="bob")


@pytest.mark.parametrize("user", ["..", ".", "../bob", ".x"])
def test_rest_and_mcp_refuse_a_bad_user_named_by_an_admin_key(server, user):
    root, _, url, keys = server
    before = snapshot(root)
    headers = {"Authorization": f"Bearer {keys['admin']}"}
    r = httpx.post(f"{url}/api/memory/facts", params={"user": user}, json={"content": "Likes tea"}, headers=headers)
    assert r.status_code == 400 and r.json()["field"] == "user"
    r = httpx.post(f"{url}/api/memory/import", params={"user": user}, json=envelope("2024-01-01"), headers=headers)
    assert r.status_code == 400 and r.json()["field"] == "user"
    r = httpx.post(f"{url}/mcp", params={"user": user}, headers={**headers, "Accept": "application/json, text/event-stream"},
                   json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    assert r.status_code == 400
    assert snapshot(root) == before


def test_no_auth_server_refuses_dot_users(world):
    root, memory = world
    before = snapshot(root)
    with live_server(create_app(memory, auth=False)) as url:
        for user in ("..", "."):
            r = httpx.post(f"{url}/api/memory/facts", params={"user": user}, json={"content": "Likes tea"})
            assert r.status_code == 400 and r.json()["field"] == "user"
    assert snapshot(root) == before


def test_mcp_stdio_refuses_a_bad_user():
    from reverie.server.mcp_server import create_mcp

    with pytest.raises(InvalidInput):
        create_mcp(None, user="..")  # type: ignore[arg-type]


# ------------------------------------------------------------ CLI
def test_cli_import_of_a_traversal_envelope_fails_and_writes_nothing(world, tmp_path_factory):
    root, memory = world
    payload = tmp_path_factory.mktemp("payload") / "evil.json"
    payload.write_text(json.dumps(envelope("../../bob/MEMORY")), encoding="utf-8")
    home = str(memory.home)
    memory.close()
    before = snapshot(root)
    result = CliRunner().invoke(cli, ["import", str(payload), "--user", "ana", "--home", home])
    assert result.exit_code != 0
    assert "notes[0].date" in result.output
    result = CliRunner().invoke(cli, ["import", str(payload), "--user", "..", "--home", home])
    assert result.exit_code != 0 and "user" in result.output
    assert snapshot(root) == before


def test_users_whose_ids_differ_only_in_case_or_normalization_never_share_a_folder(tmp_path):
    # on a file system that ignores case or Unicode normalization (macOS, Windows) "Ana" and
    # "ana" would be one folder: one user's MEMORY.md and notes would be the other's
    import unicodedata

    from reverie.files import folder_name

    ids = ["ana", "Ana", "ANA", "josé", "José", "straße", "STRASSE", "张三"]
    names = [folder_name(u) for u in ids]
    assert len({unicodedata.normalize("NFC", n).casefold() for n in names}) == len(ids)
    # plain ids keep their own names
    assert (names[0], names[3], names[7]) == ("ana", "josé", "张三")
    with Memory(tmp_path / "home", background=False) as mem:
        for user in ("ana", "Ana"):
            mem.remember(f"{user} keeps bees", user=user)
            mem.dream(user=user)
        folders = sorted(p.name for p in (tmp_path / "home" / "users").iterdir())
        assert folders == sorted(["ana", folder_name("Ana")])
        assert "Ana keeps bees" in mem.files.memory_md("Ana").read_text(encoding="utf-8")
        assert "Ana keeps bees" not in mem.files.memory_md("ana").read_text(encoding="utf-8")


def test_ids_windows_would_read_as_another_or_as_a_device_get_folders_of_their_own(tmp_path):
    from reverie.files import folder_name

    ids = ["ana", "ana.", "ana..", "con", "Con", "nul.x", "com1", "lpt9.notes", "console", "con.sole"]
    names = [folder_name(u) for u in ids]
    # Windows drops a name's trailing dots and reserves device names before any dot
    seen = {n.rstrip(".").casefold() for n in names}
    assert len(seen) == len(ids) and not any(n.endswith(".") for n in names)
    assert all(n.split(".")[0].split("+")[0] not in ("con", "nul", "com1", "lpt9") or "+" in n for n in names)
    assert (names[0], names[8]) == ("ana", "console")  # plain ids keep their own names
    with Memory(tmp_path / "home", background=False) as mem:
        for user in ("ana", "ana."):
            mem.remember(f"{user} keeps bees", user=user)
            mem.dream(user=user)
        assert "ana. keeps bees" in mem.files.memory_md("ana.").read_text(encoding="utf-8")
        assert "ana. keeps bees" not in mem.files.memory_md("ana").read_text(encoding="utf-8")


def test_a_home_of_the_older_layout_is_renamed_once_when_opened(tmp_path):
    from reverie.files import LAYOUT_META, folder_name

    home = tmp_path / "home"
    with Memory(home, background=False) as mem:
        mem.remember("Keeps bees", user="Ana")
        mem.dream(user="Ana")
        mem.store.set_meta(LAYOUT_META, "1")
    new = home / "users" / folder_name("Ana")
    new.rename(home / "users" / "Ana")  # where an older reverie kept Ana's files
    with Memory(home, background=False) as mem:
        assert "Keeps bees" in mem.files.memory_md("Ana").read_text(encoding="utf-8")
        assert not (home / "users" / "Ana").exists() or new.samefile(home / "users" / "Ana")
        assert mem.sync(user="Ana").changed is False  # MEMORY.md found where it is expected


def test_a_home_of_layout_2_moves_a_trailing_dot_or_device_folder_once_when_opened(tmp_path):
    from reverie.files import LAYOUT_META, folder_name

    home = tmp_path / "home"
    with Memory(home, background=False) as mem:
        for user in ("con", "ana."):
            mem.remember("Keeps bees", user=user)
            mem.dream(user=user)
        mem.store.set_meta(LAYOUT_META, "2")
    for user in ("con", "ana."):
        (home / "users" / folder_name(user)).rename(home / "users" / user)  # where layout 2 kept them
    with Memory(home, background=False) as mem:
        for user in ("con", "ana."):
            assert not (home / "users" / user).exists()
            assert "Keeps bees" in mem.files.memory_md(user).read_text(encoding="utf-8")
            assert mem.sync(user=user).changed is False
