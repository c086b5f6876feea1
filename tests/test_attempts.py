"""cog edit --attempts N: N attempts side by side in worktrees, each with its own scripted model
(a cassette each), the project's real tests run in each (sandboxed, as run_tests runs them), the
winner picked (most passing, then fewest changed lines, then cost), applied through the undo
journal (so cog undo takes it back), the others kept as branches; --json lines tagged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import REPLAY, run_cog
from conftest import GIT_ENV

from cogcli.settings.options import SettingFlags
from cogcli.worktrees.apply import apply_winner
from cogcli.worktrees.attempts import run_attempts
from cogcli.worktrees.git_ops import listed
from cogcli.worktrees.pick import AttemptRow, pick
from cogcli.worktrees.place import WorktreeError

BUGGY = '    """Return the sum of a and b."""\n    return a - b'


def cassette(path: Path, new_text: str, usage: int = 100) -> str:
    """A cassette that replaces add's body with ``new_text`` and ends."""
    turns = [
        {"type": "cassette", "schemaVersion": 1, "model": "scripted", "createdAt": "2026-12-06T00:00:00Z"},
        {"type": "turn", "text": "Fixing.", "toolCalls": [{"id": "c1", "name": "edit_file", "arguments": {
            "path": "calc/ops.py", "old_text": BUGGY, "new_text": new_text}}],
         "usage": {"inputTokens": usage, "outputTokens": 10}, "stopReason": "tool_calls"},
        {"type": "turn", "text": "Done.", "toolCalls": [], "usage": {"inputTokens": usage, "outputTokens": 5}, "stopReason": "stop"},
    ]
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return f"replay:{path}"


@pytest.fixture
def scripts(tmp_path: Path) -> list[str]:
    return [
        cassette(tmp_path / "wrong.jsonl", '    """Return the sum of a and b."""\n    return a * b'),  # test_add fails
        cassette(tmp_path / "wordy.jsonl", '    """Return the sum of a and b."""\n    # add, not subtract\n    return a + b', usage=50),
        cassette(tmp_path / "tight.jsonl", '    """Return the sum of a and b."""\n    return a + b'),
    ]


@pytest.mark.anyio
async def test_the_attempt_whose_tests_pass_with_the_fewest_lines_wins_and_cog_undo_takes_it_back(make_repo, scripts, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CI", "1")
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    calc = make_repo("calc")
    seen: dict[int, set[str]] = {}
    done = await run_attempts(calc, "Fix add", SettingFlags(), 3, models=scripts,
                              on_event=lambda n, e: seen.setdefault(n, set()).add(e.type))
    rows = {r.attempt: r for r in done.rows}
    assert set(seen) == {1, 2, 3} and all({"start", "finish", "tool-result"} <= kinds for kinds in seen.values())
    assert (rows[1].passed, rows[1].failed) == (2, 1)  # the real tests ran in each worktree
    assert (rows[2].passed, rows[2].failed, rows[2].added, rows[2].removed) == (3, 0, 2, 1)
    assert (rows[3].passed, rows[3].failed, rows[3].added, rows[3].removed) == (3, 0, 1, 1)
    assert rows[2].tokens == 115 and rows[3].tokens == 215
    assert done.winner is not None and done.winner.attempt == 3
    assert "return a - b" in (calc / "calc" / "ops.py").read_text().split("def sub")[0]  # nothing applied yet

    applied = apply_winner(calc, done.base, done.winner, "Fix add")
    assert applied.files == ["calc/ops.py"]
    assert "    return a + b\n" in (calc / "calc" / "ops.py").read_text()
    assert sorted(w.name for w in listed(calc)) == sorted(r.name for r in done.rows)  # all kept as branches

    undo = run_cog(["undo"], cwd=calc)
    assert undo.returncode == 0, undo.stderr
    assert "return a - b" in (calc / "calc" / "ops.py").read_text().split("def sub")[0]


def test_the_winner_is_not_applied_over_the_persons_own_change(make_repo, scripts) -> None:  # type: ignore[no-untyped-def]
    import anyio

    calc = make_repo("calc")
    done = anyio.run(lambda: run_attempts(calc, "Fix add", SettingFlags(approval="auto"), 2, models=scripts[1:]))
    assert done.winner is not None and done.winner.attempt == 2
    ops = calc / "calc" / "ops.py"
    ops.write_text(ops.read_text() + "\n# mine\n")
    before = ops.read_bytes()
    with pytest.raises(WorktreeError, match="calc/ops.py changed in your work tree since the attempts started: nothing was applied"):
        apply_winner(calc, done.base, done.winner, "Fix add")
    assert ops.read_bytes() == before


def test_pick_order_tests_then_lines_then_cost_and_a_failed_run_only_last() -> None:
    def row(n: int, passed: int, lines: int, cost: float | None, status: str = "completed") -> AttemptRow:
        return AttemptRow(attempt=n, name=f"t-{n}", branch=f"cog/t-{n}", path="/x", status=status, commit="c" * 40,
                          passed=passed, failed=0, added=lines, removed=0, cost_usd=cost)

    assert pick([row(1, 2, 1, 0.1), row(2, 3, 9, 0.9)]).attempt == 2  # more passing beats fewer lines
    assert pick([row(1, 3, 5, 0.1), row(2, 3, 2, 0.9)]).attempt == 2  # then fewer lines
    assert pick([row(1, 3, 2, None), row(2, 3, 2, 0.5), row(3, 3, 2, 0.2)]).attempt == 3  # then cost, unknown last
    assert pick([row(1, 9, 1, 0.0, status="error"), row(2, 1, 5, 1.0)]).attempt == 2  # a failed run wins only alone
    assert pick([AttemptRow(attempt=1, name="a", branch="cog/a", path="/x")]) is None  # nothing changed


@pytest.mark.slow
def test_cog_edit_attempts_json_lines_are_tagged_and_end_with_the_comparison(make_repo) -> None:  # type: ignore[no-untyped-def]
    calc = make_repo("calc")
    (calc / "node_modules" / "left").mkdir(parents=True)  # ignored: the attempts start without it, and are told so
    (calc / ".git" / "info" / "exclude").write_text("node_modules/\n")
    done = run_cog(["edit", "--json", "--attempts", "2", "--model", REPLAY, "Fix add"], cwd=calc, env=GIT_ENV)
    assert done.returncode == 0, done.stderr
    assert "git ignores node_modules/, so each attempt's worktree starts without it" in done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    tagged = [line for line in lines if line.get("type") != "attempts"]
    assert {line["attempt"] for line in tagged} == {1, 2}
    assert sum(1 for line in tagged if line["type"] == "finish") == 2
    last = lines[-1]
    assert last["type"] == "attempts" and last["winner"] == 1 and last["applied"]["files"] == ["calc/ops.py"]
    assert [(a["attempt"], a["passed"], a["failed"]) for a in last["attempts"]] == [(1, 3, 0), (2, 3, 0)]
    assert "return a + b" in (calc / "calc" / "ops.py").read_text()

    text = run_cog(["edit", "--attempts", "2", "--worktree", "--model", REPLAY, "Fix add"], cwd=calc)
    assert text.returncode == 2 and "goes without --worktree" in text.stderr


def test_attempts_1_is_a_usage_error_naming_the_fix_not_a_quiet_plain_run(make_repo) -> None:  # type: ignore[no-untyped-def]
    calc = make_repo("calc")
    before = (calc / "calc" / "ops.py").read_text()
    done = run_cog(["edit", "--attempts", "1", "--model", REPLAY, "Fix add"], cwd=calc, env=GIT_ENV)
    assert done.returncode == 2, done.stderr
    assert "--attempts 1 is one attempt, not best-of-N: give --attempts 2 to 8 (or leave --attempts out for a plain run)" in done.stderr
    assert (calc / "calc" / "ops.py").read_text() == before  # nothing ran
    assert not (calc / ".cog" / "worktrees").exists()
    over = run_cog(["edit", "--attempts", "9", "--model", REPLAY, "Fix add"], cwd=calc, env=GIT_ENV)
    assert over.returncode == 2 and "--attempts" in over.stderr
