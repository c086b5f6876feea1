"""An undo refused because files changed since the run names every one of them — bounded: the first
ten and "and K more", what differs shown for the first three — in every front end's message: `cog
undo`, chat's and ACP's `/undo` (one reply, `rewind.undo_text`), Studio's `POST /api/threads/{id}/undo`.
Before, a person fixing the first file named was refused again for the next."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import run_cog
from serve_helpers import Served
from test_undo_walk import Thread

from cogcli.session import Session
from cogcli.threads.rewind import slash_reply
from cogcli.threads.undo import UndoRefused

NAMES = [f"f{n:02}.txt" for n in range(12)]


@pytest.fixture
def changed(make_repo: Callable[..., Path]) -> Thread:
    """A run that rewrote twelve files, every one changed again since by the person."""
    root = make_repo("calc")
    for name in NAMES:
        (root / name).write_text("old\n")
    thread = Thread(root)
    thread.run("rewrite", *((name, b"the run's\n") for name in NAMES))
    for name in NAMES:
        (root / name).write_text("the person's\n")
    return thread


def check(said: str) -> None:
    first = next(line for line in said.splitlines() if "files changed since the run" in line)
    assert "12 files changed since the run" in first and ", ".join(NAMES[:10]) + " and 2 more" in first, said
    assert said.count("what differs from what the run left") == 3 and "… and 9 more files changed since the run" in said, said
    assert "+the person's" in said


def test_session_undo_names_every_changed_file_and_writes_nothing(changed: Thread) -> None:
    with Session(changed.root) as session, pytest.raises(UndoRefused) as refused:
        session.undo(changed.id)
    check(refused.value.message)
    assert all((changed.root / n).read_text() == "the person's\n" for n in NAMES)


def test_cog_undo_says_them_all_with_the_fix(changed: Thread) -> None:
    out = run_cog(["undo"], changed.root)
    assert out.returncode == 1
    check(out.stderr)
    assert "to undo it: put each file back as the run left it" in out.stderr


def test_chat_and_acp_undo_say_them_all(changed: Thread) -> None:
    with Session(changed.root) as session:
        said = slash_reply(session, changed.id, "/undo")
    assert said is not None and said.startswith("undo refused: 12 files changed since the run")
    check(said)


def test_studio_undo_says_them_all(changed: Thread) -> None:
    with Served(changed.root) as srv:
        refused = srv.post(f"/api/threads/{changed.id}/undo", {})
    assert refused.status_code == 409, refused.text
    check(refused.json()["error"])  # what Studio shows under its Undo button


def test_one_changed_file_is_refused_as_before(changed: Thread) -> None:
    for name in NAMES[1:]:
        (changed.root / name).write_text("the run's\n")
    with Session(changed.root) as session, pytest.raises(UndoRefused) as refused:
        session.undo(changed.id)
    assert refused.value.message.startswith("f00.txt changed since the run, so it cannot be put back as it was")
