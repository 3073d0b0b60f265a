"""What a security review found: secrets echoed by errors and logs, user ids whose folder
name no file system takes, and a store file other accounts could read."""

from __future__ import annotations

import logging
import os
import stat

import httpx
import pytest
from typer.testing import CliRunner

from reverie import Memory
from reverie.cli import app as cli
from reverie.errors import InvalidInput, NotFound
from reverie.files import folder_name
from reverie.server import create_app
from tests.live_server import live_server

TOKEN = "ghp_" + "Zx9" * 12  # a made-up GitHub token
EMAIL = "errmail@example.org"


def test_an_error_made_from_a_value_sent_does_not_repeat_its_secret(mem):
    mem.remember("Plays chess on Sundays", user="ana", tags=["chess"])
    with pytest.raises(NotFound) as found:
        mem.merge_tags("chess", TOKEN, user="ana")
    assert TOKEN not in str(found.value) and "[api-key]" in str(found.value)
    with pytest.raises(InvalidInput) as refused:
        mem.facts(user=EMAIL)
    assert EMAIL not in str(refused.value)
    with pytest.raises(InvalidInput) as section:
        mem.set_profile("password: HunterZeta42", "x", user="ana")
    assert "HunterZeta42" not in str(section.value)


def test_the_cli_does_not_print_a_secret_it_refuses(home):
    Memory(home, background=False).close()
    result = CliRunner().invoke(cli, ["facts", "--user", EMAIL, "--home", str(home)])
    assert result.exit_code != 0
    assert EMAIL not in result.output and "valid user id" in result.output


def test_a_rest_field_named_with_a_secret_does_not_come_back(home):
    with Memory(home, background=False) as memory, live_server(create_app(memory, auth=False, mcp=False)) as url:
        answer = httpx.post(f"{url}/api/memory/facts?user=ana", json={"content": "hi", EMAIL: "x", TOKEN: 1},
                            timeout=30)
    assert answer.status_code == 422
    assert EMAIL not in answer.text and TOKEN not in answer.text, answer.text
    assert "unknown field" in answer.json()["detail"]


def test_the_access_log_line_is_redacted(mem, caplog):
    create_app(mem, auth=False, mcp=False)  # puts the filter on uvicorn's access logger
    access = logging.getLogger("uvicorn.access")
    with caplog.at_level(logging.INFO, logger="uvicorn.access"):
        access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", f"/api/memory/facts/{EMAIL}?key={TOKEN}",
                    "1.1", 404)
    (line,) = [r.getMessage() for r in caplog.records if r.name == "uvicorn.access"]
    assert EMAIL not in line and TOKEN not in line and "GET /api/memory/facts/[email]" in line


@pytest.mark.parametrize("user", ["𠀀" * 64, "ΐ" * 64, "a" * 64])
def test_every_valid_user_id_has_a_folder_name_a_file_system_takes(home, user):
    assert len(folder_name(user).encode("utf-8")) <= 255
    with Memory(home, background=False) as memory:
        memory.add([{"role": "user", "content": "I moved to Lisbon last spring"}], user=user)
        memory.flush(user=user)
        run = memory.dream(user=user)
        assert run.status != "failed", run.error
        assert any(memory.files.notes_dir(user).iterdir())
        assert memory.health(user=user).notes_unwritten == []


def test_windows_device_names_with_superscript_digits_get_their_own_folder():
    assert folder_name("com¹") != "com¹" and folder_name("lpt³.x") != "lpt³.x"
    assert folder_name("com10") == "com10"


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_a_new_store_and_its_folders_are_their_owners_alone(tmp_path):
    home = tmp_path / "home"
    old = os.umask(0o022)
    try:
        with Memory(home, background=False) as memory:
            memory.remember("Lives in Lisbon", user="ana")
            modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in home.iterdir() if p.name.startswith("reverie.db")}
            folder = memory.files.user_dir("ana")
            memory.add([{"role": "user", "content": "I moved to Lisbon last spring"}], user="ana")
            memory.flush(user="ana")
            user_mode = stat.S_IMODE(folder.stat().st_mode)
    finally:
        os.umask(old)
    assert modes["reverie.db"] == 0o600 and modes.get("reverie.db-wal", 0o600) == 0o600, modes
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert user_mode == 0o700


def test_no_tag_is_made_of_what_redaction_took_out(mem):
    mem.add([{"role": "user", "content": "my key is sk-proj-" + "a1B2c3D4e5" * 4 + " and the backup is sk-proj-"
              + "z9Y8x7W6v5" * 4 + " for the billing service"},
             {"role": "user", "content": "My SSN: 123-45-6789 for the tax form"}], user="ana")
    mem.flush(user="ana")
    names = {t["name"] for t in mem.tags(user="ana")}
    assert names and not {n for n in names if "api" in n or "id number" in n or "id-number" in n}, names
