"""Paths from the workspace that cog's own process writes or decides by: ``.git/info/exclude``,
the ``.git`` that says which repository git works on, and ``.cog/`` (threads, journal, test
reports). A link there, or a ``.git`` naming another repository, must not make cog write outside
the workspace or show another repository. Each attack is shown working with the plain primitive
(a plain ``open``, plain git, plain SQLite) and failing against cog, as root and as an
unprivileged user."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from .conftest import Runner, needs_bwrap


def cassette(runner: Runner, *calls: tuple[str, dict[str, Any]]) -> str:
    """A replayed model that makes ``calls``, one a turn, then says it is done."""
    path = runner.scratch("cassette") / "c.jsonl"
    turns: list[dict[str, Any]] = [{"type": "cassette", "schemaVersion": 1, "model": "test:attacker"}]
    turns += [{"type": "turn", "toolCalls": [{"id": f"c{i}", "name": name, "arguments": args}]} for i, (name, args) in enumerate(calls)]
    turns.append({"type": "turn", "text": "Done."})
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    runner.own(path.parent)
    return f"replay:{path}"


def outside_file(runner: Runner, text: str = "the person's file\n") -> Path:
    target = runner.scratch("outside") / "victim.txt"
    target.write_text(text)
    runner.own(target.parent)
    return target


def results(stdout: str) -> dict[str, dict[str, Any]]:
    """The tool results of a ``--json`` run, by tool name (the last of each)."""
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return {e["toolName"]: e for e in events if e.get("type") == "tool-result"}


# --- .git/info/exclude ------------------------------------------------------------------------


@pytest.mark.parametrize("link", ["info/exclude", "info"])
def test_info_exclude_as_a_link_is_not_written_through(runner: Runner, link: str) -> None:
    repo = runner.make_repo({"a.py": "x = 1\n"})
    victim = outside_file(runner)
    info = repo / ".git" / "info"
    if link == "info":
        for entry in info.iterdir():
            entry.unlink()
        info.rmdir()
        info.symlink_to(victim.parent)  # .git/info/exclude is now the outside folder's "exclude"
        target = victim.parent / "exclude"
    else:
        (info / "exclude").unlink()
        (info / "exclude").symlink_to(victim)
        target = victim
    os.lchown(repo / ".git" / link, runner.uid, runner.gid)

    # the plain primitive (what cog did: open the exclude file to append) writes outside
    plain = runner.run(["sh", "-c", "printf '/.cog/\\n' >> .git/info/exclude"], repo)
    assert plain.returncode == 0, plain.stderr
    assert target.read_text().endswith("/.cog/\n"), "the plain append did not land outside: the attack proves nothing"
    if link == "info":
        target.unlink()
    else:
        target.write_text("the person's file\n")

    out = runner.cog(["edit", "--model", cassette(runner), "hello"], repo)
    assert out.returncode == 0, out.stderr
    assert f"not adding /.cog/ to .git/info/exclude: .git/{link} is a symbolic link" in out.stderr, out.stderr
    if link == "info":
        assert not target.exists()
        assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]
    else:
        assert target.read_text() == "the person's file\n"
    assert (repo / ".cog" / "threads.db").is_file()  # the run itself went on


# --- a .git planted in a workspace that is not a repository ------------------------------------


def non_repo_and_another(runner: Runner) -> tuple[Path, Path]:
    other = runner.make_repo({"secret.txt": "another repository's file\n"}, name="other")
    workspace = runner.scratch("plain")
    (workspace / "a.py").write_text("x = 1\n")
    runner.own(workspace)
    return workspace, other


def plain_git_follows(runner: Runner, workspace: Path) -> None:
    shown = runner.git(workspace, "status", "--porcelain")
    assert "secret.txt" in shown.stdout, "plain git did not take the planted .git: the attack proves nothing"


def test_a_gitdir_file_planted_between_two_commands_is_just_a_file(runner: Runner) -> None:
    workspace, other = non_repo_and_another(runner)
    exclude_before = (other / ".git" / "info" / "exclude").read_text()
    planted = runner.run(["sh", "-c", f"printf 'gitdir: {other}/.git\\n' > .git"], workspace)
    assert planted.returncode == 0, planted.stderr
    plain_git_follows(runner, workspace)

    # from the folder itself: cog does not take the planted .git for a repository
    refused = runner.cog(["tool", "git_status"], workspace)
    assert refused.returncode == 2 and "is not in a git repository" in refused.stderr, refused.stderr
    for tool in ("git_status", "git_diff"):
        out = runner.cog(["tool", tool, "-C", str(workspace), "--json"], workspace)
        result = json.loads(out.stdout.splitlines()[-1])
        assert "secret.txt" not in out.stdout, f"{tool} showed the other repository"
        assert "not in a git repository" in result["error"], result
        assert ".git is not used as a git repository" in out.stderr and str(other) in out.stderr

    model = cassette(runner, ("git_diff", {}), ("write_file", {"path": "b.py", "content": "y = 2\n"}))
    out = runner.cog(["edit", "-C", str(workspace), "--json", "--yes", "--model", model, "look"], workspace)
    assert out.returncode == 0, out.stderr
    assert "secret.txt" not in out.stdout
    assert "not in a git repository" in results(out.stdout)["git_diff"]["error"]
    assert (other / ".git" / "info" / "exclude").read_text() == exclude_before, "cog wrote into the other repository"
    assert (workspace / "b.py").read_text() == "y = 2\n"


@needs_bwrap
def test_a_gitdir_file_a_sandboxed_test_writes_changes_nothing_for_the_run(runner: Runner) -> None:
    workspace, other = non_repo_and_another(runner)
    exclude_before = (other / ".git" / "info" / "exclude").read_text()
    plant = f"printf 'gitdir: {other}/.git\\n' > .git"
    model = cassette(runner, ("run_tests", {}), ("git_status", {}), ("git_diff", {}))
    out = runner.cog(["edit", "-C", str(workspace), "--json", "--yes", "--sandbox", "on", "--test-command", plant, "--model", model, "look"], workspace)
    assert out.returncode == 0, out.stderr
    assert (workspace / ".git").read_text().startswith("gitdir:"), "the sandboxed test could not plant .git: the attack proves nothing"
    plain_git_follows(runner, workspace)

    shown = results(out.stdout)
    assert "secret.txt" not in out.stdout
    for tool in ("git_status", "git_diff"):
        assert "not in a git repository" in shown[tool]["error"], shown[tool]
    # and the next command, a new process, does not take it either
    nxt = runner.cog(["edit", "-C", str(workspace), "--json", "--model", cassette(runner, ("git_status", {})), "again"], workspace)
    assert nxt.returncode == 0, nxt.stderr
    assert "secret.txt" not in nxt.stdout
    assert (other / ".git" / "info" / "exclude").read_text() == exclude_before


def test_a_worktree_git_made_is_still_a_repository(runner: Runner) -> None:
    """The legitimate case of a ``.git`` file naming a git dir outside: ``git worktree add``."""
    main = runner.make_repo({"a.py": "x = 1\n"})
    tree = runner.base / f"wt-{main.name}"
    added = runner.git(main, "worktree", "add", "-q", str(tree))
    assert added.returncode == 0, added.stderr
    assert (tree / ".git").read_text().startswith("gitdir:")
    (tree / "a.py").write_text("x = 2\n")
    runner.own(tree)

    out = runner.cog(["tool", "git_diff", "--json"], tree)
    result = json.loads(out.stdout.splitlines()[-1])
    assert "+x = 2" in result["result"], result
    done = runner.cog(["edit", "--model", cassette(runner), "hello"], tree)
    assert done.returncode == 0, done.stderr
    assert "/.cog/" in (main / ".git" / "info" / "exclude").read_text().splitlines()
    assert runner.git(tree, "status", "--porcelain").stdout.strip() == "M a.py"  # .cog/ is excluded


def test_a_gitdir_file_planted_in_a_subfolder_shows_nothing_of_the_other_repository(runner: Runner) -> None:
    other = runner.make_repo({"secret.txt": "another repository's file\n"}, name="other")
    repo = runner.make_repo({"sub/a.py": "x = 1\n"})
    (repo / "sub" / ".git").write_text(f"gitdir: {other}/.git\n")
    runner.own(repo)
    plain = runner.git(repo / "sub", "ls-files")
    assert "secret.txt" in plain.stdout, "plain git did not take the planted .git: the attack proves nothing"

    out = runner.cog(["tool", "list_files", "path=sub", "--json"], repo)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.splitlines()[-1])
    assert "sub/a.py" in result["details"]["files"] and "secret.txt" not in out.stdout, result


def test_a_submodule_git_made_is_still_a_repository(runner: Runner) -> None:
    """The other legitimate ``.git`` file naming a git dir outside its folder: a submodule's."""
    lib = runner.make_repo({"lib.py": "v = 1\n"}, name="lib")
    top = runner.make_repo({"a.py": "x = 1\n"}, name="super")
    added = runner.run(["git", "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib"], top)
    assert added.returncode == 0, added.stderr
    sub = top / "lib"
    assert (sub / ".git").read_text().startswith("gitdir: ../.git/modules/lib")
    (sub / "lib.py").write_text("v = 2\n")
    runner.own(top)

    out = runner.cog(["tool", "git_diff", "--json"], sub)
    result = json.loads(out.stdout.splitlines()[-1])
    assert "+v = 2" in result["result"], result


# --- .cog/ --------------------------------------------------------------------------------------


def link_in_cog(runner: Runner, repo: Path, name: str) -> Path:
    """``.cog/<name>`` (or ``.cog`` itself) made a link to an empty folder (or a file) outside."""
    outside = runner.scratch("outside")
    link = repo / ".cog" / name if name else repo / ".cog"
    link.parent.mkdir(exist_ok=True)
    if name == "threads.db":
        target = outside / "stolen.db"
        target.write_bytes(b"")
    else:
        target = outside
    link.symlink_to(target)
    runner.own(repo)
    runner.own(outside)
    return outside


@pytest.mark.parametrize("name", ["", "threads.db", "journal"])
def test_a_link_in_dot_cog_stops_cog_edit_and_nothing_is_written_outside(runner: Runner, name: str) -> None:
    repo = runner.make_repo({"a.py": "x = 1\n"})
    outside = link_in_cog(runner, repo, name)
    before = sorted(p.name for p in outside.iterdir())

    # the plain primitives write outside: SQLite opens the store by its path, a folder is made through the link
    if name == "journal":
        plain = runner.run(["sh", "-c", "mkdir -p .cog/journal/run && echo x > .cog/journal/run/1.json"], repo)
        assert plain.returncode == 0, plain.stderr
        assert (outside / "run" / "1.json").exists(), "the plain write did not land outside: the attack proves nothing"
    else:
        sql = "import sqlite3; sqlite3.connect('.cog/threads.db').execute('create table t(x)')"
        plain = runner.run([runner.python, "-c", sql], repo)
        assert plain.returncode == 0, plain.stderr
        stolen = outside / ("stolen.db" if name else "threads.db")
        assert stolen.stat().st_size > 0, "SQLite did not write outside: the attack proves nothing"
    for entry in outside.iterdir():
        if entry.is_dir():
            import shutil

            shutil.rmtree(entry)
        elif entry.name not in before:
            entry.unlink()
        else:
            entry.write_bytes(b"")

    model = cassette(runner, ("write_file", {"path": "b.py", "content": "y = 2\n"}))
    out = runner.cog(["edit", "--yes", "--model", model, "write b"], repo)
    assert out.returncode == 2, (out.returncode, out.stderr)
    shown = f"{repo}/.cog" + (f"/{name}" if name else "")
    assert f"{shown} is a symbolic link" in out.stderr, out.stderr
    assert "Remove the link" in out.stderr
    assert sorted(p.name for p in outside.iterdir()) == before, "cog wrote outside the workspace"
    if name == "threads.db":
        assert (outside / "stolen.db").stat().st_size == 0
    assert not (repo / "b.py").exists(), "the run went on"


WRITE_REPORT = (
    "from pathlib import Path; from workspace_tools.runners.finished import write_report; "
    "print(write_report(Path('.').resolve(), {'outcome': 'failed'}, [{'id': 't', 'outcome': 'failed'}], []))"
)


def test_test_reports_as_a_link_is_not_written_through(runner: Runner) -> None:
    repo = runner.make_repo({"a.py": "x = 1\n"})
    outside = link_in_cog(runner, repo, "test-reports")

    # the plain primitive (a report written by path, as cog did) lands outside
    plain = runner.run([runner.python, "-c", "import pathlib; pathlib.Path('.cog/test-reports/run-x.json').write_text('{}')"], repo)
    assert plain.returncode == 0, plain.stderr
    assert (outside / "run-x.json").exists(), "the plain write did not land outside: the attack proves nothing"
    (outside / "run-x.json").unlink()

    # what run_tests calls when a run has more results than it keeps, run as this user
    out = runner.run([runner.python, "-c", WRITE_REPORT], repo)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None"
    assert list(outside.iterdir()) == [], "cog wrote the report outside the workspace"
    assert ".cog/test-reports is a symbolic link" in out.stderr, out.stderr
    # and with the link gone, the report is written in the workspace
    (repo / ".cog" / "test-reports").unlink()
    written = runner.run([runner.python, "-c", WRITE_REPORT], repo)
    assert written.stdout.strip().startswith(".cog/test-reports/run-"), written.stderr
    assert (repo / written.stdout.strip()).is_file()


@needs_bwrap
def test_the_sandbox_does_not_bind_what_a_dot_cog_link_points_to(runner: Runner) -> None:
    repo = runner.make_repo({"a.py": "x = 1\n"})
    outside = link_in_cog(runner, repo, "")
    # without the sandbox (what a test does there when nothing stops it) the write lands outside
    runner.run(["sh", "-c", "touch .cog/PWNED"], repo)
    assert (outside / "PWNED").exists(), "the plain write did not land outside: the attack proves nothing"
    (outside / "PWNED").unlink()

    out = runner.cog(["tool", "run_tests", "--sandbox", "on", "--test-command", "touch .cog/PWNED", "--json"], repo)
    result = json.loads(out.stdout.splitlines()[-1])
    assert ".cog is a symbolic link" in result["error"] and "the tests were not run" in result["error"], result
    assert list(outside.iterdir()) == []
