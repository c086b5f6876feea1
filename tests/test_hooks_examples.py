"""The two hooks in ``examples/hooks/`` run for real under the real ``cog edit --json``: the path guard
blocks an edit of a migration (the model reads why, the file is untouched) and lets others through;
the failing-tests hook posts the failing test names from ``details`` to a webhook on loopback."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import json_lines, repo_with, run_cog

from conftest import ROOT

EXAMPLES = ROOT / "examples" / "hooks"


def cassette(path: Path, calls: list[dict[str, Any]]) -> str:
    lines = [{"type": "cassette", "schemaVersion": 1, "model": "test:hooks"}]
    lines += [{"type": "turn", "toolCalls": [c]} for c in calls]
    lines.append({"type": "turn", "text": "Done."})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return f"replay:{path}"


def config(tmp_path: Path, text: str) -> dict[str, str]:
    (tmp_path / "xdg" / "cog").mkdir(parents=True)
    (tmp_path / "xdg" / "cog" / "config.toml").write_text(text)
    return {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}


@pytest.mark.slow
def test_the_protect_paths_example_blocks_a_migration_edit_and_the_model_is_told(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"migrations/0001_init.py": "x = 1\n", "app.py": "x = 1\n"})
    env = config(tmp_path, f'[[hooks.PreToolUse]]\nmatcher = "edit_file|write_file"\ncommand = "{sys.executable} {EXAMPLES / "protect_paths.py"}"\n')
    calls = [
        {"id": "m", "name": "edit_file", "arguments": {"path": "migrations/0001_init.py", "old_text": "x = 1", "new_text": "x = 2"}},
        {"id": "a", "name": "edit_file", "arguments": {"path": "app.py", "old_text": "x = 1", "new_text": "x = 2"}},
        {"id": "e", "name": "write_file", "arguments": {"path": "sub/../.env", "content": "KEY=1"}},
    ]
    out = run_cog(["edit", "--json", "--yes", "--model", cassette(tmp_path / "c.jsonl", calls), "change x"], repo, env=env)
    assert out.returncode == 0, out.stderr
    events = json_lines(out.stdout)
    results = {e["toolCallId"]: e for e in events if e["type"] == "tool-result"}
    assert results["m"]["errorCode"] == "DENIED"
    assert "migrations/0001_init.py is protected (it matches 'migrations/**')" in results["m"]["error"]
    assert (repo / "migrations" / "0001_init.py").read_text() == "x = 1\n"
    assert "errorCode" not in results["a"] and (repo / "app.py").read_text() == "x = 2\n"
    assert results["e"]["errorCode"] == "DENIED" and not (repo / ".env").exists()
    hooks = [e for e in events if e["type"] == "hook"]
    assert sorted((h["toolCallId"], h["outcome"]) for h in hooks) == [("a", "ok"), ("e", "blocked"), ("m", "blocked")]


class _Inbox(BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        length = int(self.headers.get("Content-Length", 0))
        self.received.append(json.loads(self.rfile.read(length)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.slow
def test_the_failing_tests_example_posts_the_names_from_details(tmp_path: Path, make_repo: Any) -> None:
    repo = make_repo("calc")
    server = HTTPServer(("127.0.0.1", 0), _Inbox)
    _Inbox.received = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        hook = f'[[hooks.PostToolUse]]\nmatcher = "run_tests"\ncommand = "{sys.executable} {EXAMPLES / "post_failing_tests.py"}"\npass_env = ["FAILING_TESTS_WEBHOOK"]\n'
        env = {**config(tmp_path, hook), "FAILING_TESTS_WEBHOOK": f"http://127.0.0.1:{server.server_port}/hook"}
        calls = [{"id": "r", "name": "read_file", "arguments": {"path": "calc/ops.py"}}, {"id": "t", "name": "run_tests", "arguments": {}}]
        out = run_cog(["edit", "--json", "--yes", "--sandbox", "off", "--model", cassette(tmp_path / "c.jsonl", calls), "test"], repo, env=env)
    finally:
        server.shutdown()
    assert out.returncode == 1, out.stderr  # the tests fail: the run's exit status says so
    [posted] = _Inbox.received  # one post: read_file is not matched, and a passing run posts nothing
    assert posted["failing"][0]["id"] == "tests/test_ops.py::test_add" and posted["failed"] == 1
    assert posted["text"].startswith("1 failing test in calc (thread ") and "test_add" in posted["text"]
    hooks = [e for e in json_lines(out.stdout) if e["type"] == "hook"]
    assert [(h["hookEventName"], h["toolName"], h["outcome"]) for h in hooks] == [("PostToolUse", "run_tests", "ok")]
