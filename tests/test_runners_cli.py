"""``cog tool run_tests`` for people: arguments after ``--`` go to the runner, a single path is a
list, and the exit code follows the outcome (a failing custom test command exits 1)."""

from __future__ import annotations

from cli_helpers import json_lines, run_cog


def test_pass_through_after_double_dash_and_a_single_path(make_repo) -> None:
    repo = make_repo("calc")
    out = run_cog(["tool", "run_tests", "paths=tests/test_ops.py", "--json", "--", "-x", "-p", "no:cacheprovider"], repo)
    assert out.returncode == 1, out.stderr
    events = json_lines(out.stdout)
    assert events[1]["arguments"] == {"paths": "tests/test_ops.py", "args": ["-x", "-p", "no:cacheprovider"]}
    result = events[-1]
    assert result["details"]["outcome"] == "failed" and result["details"]["tests_total"] == 1  # -x stopped it
    assert [e["type"] for e in events].count("tool-update") == 1


def test_a_failing_custom_command_exits_1_and_a_passing_one_0(make_repo) -> None:
    repo = make_repo("calc")
    failing = run_cog(["tool", "run_tests", "--test-command", "echo no; exit 3", "--sandbox", "off"], repo)
    assert failing.returncode == 1
    assert "Run tests  all · failed (exit 3), no counts" in failing.stdout
    passing = run_cog(["tool", "run_tests", "--test-command", "true", "--sandbox", "off"], repo)
    assert passing.returncode == 0, passing.stdout


def test_no_tests_collected_exits_1(make_repo) -> None:
    out = run_cog(["tool", "run_tests", "keyword=nothing_is_called_this", "--sandbox", "off"], make_repo("calc"))
    assert out.returncode == 1
    assert "no tests ran" in out.stdout


def test_refused_runner_options_and_double_dash_for_other_tools(make_repo) -> None:
    repo = make_repo("calc")
    refused = run_cog(["tool", "run_tests", "--", "--junitxml=x.xml"], repo)
    assert refused.returncode == 2
    assert "args: --junitxml is not allowed for pytest" in refused.stdout
    other = run_cog(["tool", "read_file", "path=calc/ops.py", "--", "-x"], repo)
    assert other.returncode == 2 and "only run_tests takes arguments after --" in other.stderr


def test_cog_tools_lists_the_runners_and_what_runs_here(tmp_path) -> None:
    (tmp_path / "go.mod").write_text("module example.com/x\n")
    out = run_cog(["tools", "-C", "."], tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "run_tests(paths?, keyword?, args?)" in lines
    assert any(line.startswith("    go      go.mod; needs Go") for line in lines)
    assert any(line.startswith("    vitest  package.json") for line in lines)
    assert lines[-1] == "    here: go"
