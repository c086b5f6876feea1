"""Two small repositories, scripted cassettes and a six-task file for the ``cog batch`` tests."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from conftest import FIXTURES, GIT_ENV

FIX_ADD = {"path": "calc/ops.py", "old_text": "    return a - b\n\n\ndef sub", "new_text": "    return a + b\n\n\ndef sub"}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                          env={**GIT_ENV, "PATH": "/usr/bin:/bin", "HOME": str(repo)})
    return done.stdout


def make_repos(root: Path) -> dict[str, Path]:
    """``calc`` (fixtures/calc: test_add fails) and ``greet`` (a ``main`` and a ``dev`` branch)."""
    calc = root / "calc"
    shutil.copytree(FIXTURES / "calc", calc, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    greet = root / "greet"
    greet.mkdir()
    (greet / "hello.py").write_text('GREETING = "hello"\n', encoding="utf-8")
    (greet / "README.md").write_text("greet\n", encoding="utf-8")
    for repo in (calc, greet):
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "first")
    git(greet, "checkout", "-q", "-b", "dev")
    (greet / "hello.py").write_text('GREETING = "hi there"\n', encoding="utf-8")
    git(greet, "commit", "-q", "-am", "dev greeting")
    git(greet, "checkout", "-q", "main")
    return {"calc": calc, "greet": greet}


def cassette(path: Path, turns: list[tuple[str, list[tuple[str, dict[str, Any]]]]]) -> str:
    """A cassette of ``(text, [(tool, arguments), …])`` turns; its ``replay:`` model spec."""
    lines: list[dict[str, Any]] = [{"type": "cassette", "schemaVersion": 1, "model": "test:batch"}]
    for n, (text, calls) in enumerate(turns):
        lines.append({"type": "turn", "text": text, "usage": {"inputTokens": 100 + n, "outputTokens": 10},
                      "toolCalls": [{"id": f"c{n}_{i}", "name": name, "arguments": args} for i, (name, args) in enumerate(calls)]})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return f"replay:{path}"


def six_tasks(root: Path) -> tuple[Path, dict[str, str]]:
    """TASKS.jsonl for six tasks over the two repositories (paths relative to its folder), and
    the status each one ends with."""
    tapes = root / "tapes"
    tapes.mkdir()
    fix = cassette(tapes / "fix.jsonl", [("Fixing add.", [("edit_file", FIX_ADD)]), ("Testing.", [("run_tests", {})]), ("Fixed.", [])])
    fails = cassette(tapes / "fails.jsonl", [("Testing.", [("run_tests", {})]), ("test_add fails; I stop here.", [])])
    notes = cassette(tapes / "notes.jsonl", [("Writing notes.", [("write_file", {"path": "docs/NOTES.md", "content": "# Notes\n\nadd is wrong\n"})]), ("Done.", [])])
    greet = cassette(tapes / "greet.jsonl", [("Editing.", [("edit_file", {"path": "hello.py", "old_text": '"hello"', "new_text": '"hello, world"'})]), ("Done.", [])])
    dev = cassette(tapes / "dev.jsonl", [("Editing.", [("edit_file", {"path": "hello.py", "old_text": '"hi there"', "new_text": '"hi there!"'})]), ("Done.", [])])
    short = cassette(tapes / "short.jsonl", [("Reading.", [("read_file", {"path": "README.md"})])])  # then exhausted: an error
    tasks = [
        {"id": "calc-fix", "repo": "repos/calc", "instruction": "Fix the failing test", "model": fix},
        {"id": "calc-fails", "repo": "repos/calc", "instruction": "Look at the tests", "model": fails},
        {"id": "calc-notes", "repo": "repos/calc", "instruction": "Write notes", "model": notes},
        {"id": "greet-main", "repo": "repos/greet", "instruction": "Greet the world", "model": greet},
        {"id": "greet-dev", "repo": "repos/greet", "ref": "dev", "instruction": "Be excited", "model": dev},
        {"id": "greet-short", "repo": "repos/greet", "instruction": "Read", "model": short},
    ]
    path = root / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    expected = {"calc-fix": "passed", "calc-fails": "failed", "calc-notes": "passed", "greet-main": "passed",
                "greet-dev": "passed", "greet-short": "error"}
    return path, expected


def snapshot(repo: Path) -> dict[str, bytes]:
    """Every file of a repository, its ``.git`` included (what "never touched" means)."""
    return {str(p.relative_to(repo)): p.read_bytes() for p in sorted(repo.rglob("*")) if p.is_file() and not p.is_symlink()}


def results(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]


def check_patches(out: Path, repos: dict[str, Path], tmp: Path) -> None:
    """Each task's patch applies to a fresh clone of its repository at its base commit and makes
    exactly the files its checkout holds."""
    last = {r["id"]: r for r in results(out)}
    for task_id, result in last.items():
        if result["base"] is None:
            continue
        patch = out / "patches" / f"{task_id}.diff"
        repo = repos["calc" if task_id.startswith("calc") else "greet"]
        fresh = tmp / f"fresh-{task_id}"
        subprocess.run(["git", "clone", "-q", str(repo), str(fresh)], check=True)
        git(fresh, "checkout", "-q", result["base"])
        if patch.stat().st_size:
            subprocess.run(["git", "-C", str(fresh), "apply", "--index", str(patch)], check=True)
        work = out / "work" / task_id
        for changed in result["files_changed"]:
            assert (fresh / changed["path"]).read_bytes() == (work / changed["path"]).read_bytes(), (task_id, changed)
        assert bool(patch.stat().st_size) == bool(result["files_changed"]), task_id
        assert b".cog/" not in patch.read_bytes()  # cog's own thread store stays out of the change
