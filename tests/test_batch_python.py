"""``cog batch`` on Python repositories: a fresh clone's failed test run says why in its result, and
a setup that needs the network gets it only through the person's ``--setup-network``."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from batch_helpers import cassette, git
from cli_helpers import run_cog

from workspace_tools.sandbox import bwrap


def make_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


def one_task(tmp_path: Path, repo: Path, **task: object) -> Path:
    model = cassette(tmp_path / "tape.jsonl", [("Testing.", [("run_tests", {})]), ("Done.", [])])
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": "t1", "repo": str(repo), "instruction": "Run the tests", "model": model, **task}) + "\n")
    return path


def test_a_fresh_clone_without_the_project_s_environment_says_why_in_results_and_report(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "svc", {"pyproject.toml": "[project]\nname = 'svc'\n",
                                        "tests/test_svc.py": "import requests_toolbelt_missing\n\ndef test_x():\n    pass\n"})
    out = tmp_path / "out"
    done = run_cog(["batch", str(one_task(tmp_path, repo)), "--out", str(out), "--workers", "1"], tmp_path)
    result = json.loads((out / "results.jsonl").read_text().splitlines()[-1])
    assert result["status"] == "failed" and result["tests"]["errors"] == 1
    assert result["error"].startswith("No project environment found")
    assert "No project environment found" in done.stdout
    report = run_cog(["batch", "report", str(out)], tmp_path).stdout
    assert "No project environment found" in report and "\\x0a" not in report


@pytest.fixture
def host_server() -> Iterator[int]:
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()


@pytest.mark.skipif(bwrap.bwrap_executable() is None, reason="bubblewrap is not usable here")
def test_setup_gets_the_network_only_with_setup_network_and_says_so(tmp_path: Path, host_server: int) -> None:
    repo = make_repo(tmp_path / "calc", {"pyproject.toml": "[project]\nname = 'calc'\n",
                                         "tests/test_calc.py": "def test_x():\n    assert True\n"})
    fetch = f"/usr/bin/python3 -c \"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{host_server}/', timeout=5)\""
    tasks = one_task(tmp_path, repo, setup=fetch)
    out = tmp_path / "out"
    run_cog(["batch", str(tasks), "--out", str(out), "--workers", "1"], tmp_path)
    refused = json.loads((out / "results.jsonl").read_text().splitlines()[-1])
    assert refused["status"] == "error"
    first = refused["error"].split("\n")[0]
    assert first.startswith("the setup command exited with 1 (the setup ran without network: if it installs "
                            "dependencies, run the batch with --setup-network)")
    assert "Connection refused" in refused["error"] or "urlopen error" in refused["error"]
    out2 = tmp_path / "out2"
    done = run_cog(["batch", str(tasks), "--out", str(out2), "--workers", "1", "--setup-network"], tmp_path)
    passed = json.loads((out2 / "results.jsonl").read_text().splitlines()[-1])
    assert passed["status"] == "passed", (passed, done.stderr)
    assert passed["tests"]["passed"] == 1  # the tests still ran in the sandbox
