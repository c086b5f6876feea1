"""A repository (or a test, or the model) that makes git run its programs. Each attack is shown
working against plain ``git`` and failing against cog's tools, as root and as an unprivileged user."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from .conftest import IDENTITY, Runner, needs_bwrap

PAYLOAD = "#!/bin/sh\ntouch \"$(dirname \"$0\")/PWNED-$(basename \"$0\")\"\ncat >/dev/null 2>&1 || true\n"


def marker_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("PWNED*"))


def bare_shaped(runner: Runner) -> Path:
    """A committed folder shaped like a bare repository whose config names an fsmonitor."""
    repo = runner.make_repo(
        {
            "README.md": "hello\n",
            "vendor/lib/HEAD": "ref: refs/heads/main\n",
            "vendor/lib/config": "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n"
            "\tfsmonitor = \"touch PWNED-bare; true\"\n",
            "vendor/lib/objects/info/.keep": "",
            "vendor/lib/refs/heads/.keep": "",
            "vendor/lib/code.py": "x = 1\n",
        }
    )
    return repo


@pytest.mark.parametrize(
    "tool", [["list_files", "path=vendor/lib"], ["search_text", "pattern=x", "path=vendor/lib"], ["git_status"]]
)
def test_a_folder_shaped_like_a_repository_is_just_files(runner: Runner, tool: list[str]) -> None:
    repo = bare_shaped(runner)
    inside = repo / "vendor" / "lib"

    plain = runner.run(["git", "ls-files", "--others"], inside)  # git discovers vendor/lib as a repository
    assert plain.returncode == 0, plain.stderr
    assert marker_files(repo) == ["PWNED-bare"], "plain git did not run the planted fsmonitor: the attack proves nothing"
    (inside / "PWNED-bare").unlink()

    out = runner.cog(["tool", *tool, "--json"], repo)
    assert out.returncode == 0, out.stderr
    assert marker_files(repo) == []
    if tool[0] == "list_files":
        result = json.loads(out.stdout.splitlines()[-1])
        assert "vendor/lib/code.py" in result["result"]


def plant_in_git_config(runner: Runner, repo: Path) -> None:
    """What a test did with the sandbox off: programs named in .git/config and .gitattributes."""
    (repo / "x.sh").write_text(PAYLOAD)
    (repo / "x.sh").chmod(0o755)
    runner.own(repo / "x.sh")
    for key, value in {
        "core.fsmonitor": f"{repo}/x.sh",
        "diff.external": f"{repo}/x.sh",
        "core.pager": f"{repo}/x.sh",
        "filter.evil.clean": f"{repo}/x.sh",
        "diff.evil.textconv": f"{repo}/x.sh",
    }.items():
        assert runner.git(repo, "config", key, value).returncode == 0
    (repo / ".gitattributes").write_text("*.py filter=evil diff=evil\n")
    (repo / "a.py").write_text("changed = True\n")
    runner.own(repo)


def test_programs_planted_in_git_config_do_not_run_from_cogs_read_only_tools(runner: Runner) -> None:
    repo = runner.make_repo({"a.py": "x = 1\n", "README.md": "hi\n"})
    plant_in_git_config(runner, repo)

    runner.git(repo, "status")
    runner.run(["git", "-c", "core.pager=", "diff", "HEAD"], repo)
    assert marker_files(repo), "plain git ran none of the planted programs: the attack proves nothing"
    for p in repo.rglob("PWNED*"):
        p.unlink()

    for tool in (["git_status"], ["git_diff"], ["list_files"], ["search_text", "pattern=changed"]):
        out = runner.cog(["tool", *tool, "--json"], repo)
        assert out.returncode == 0, (tool, out.stderr)
        assert marker_files(repo) == [], f"{tool[0]} ran a planted program"
    result = json.loads(runner.cog(["tool", "git_diff", "--json"], repo).stdout.splitlines()[-1])
    assert "+changed = True" in result["result"]  # and the tools still work


@needs_bwrap
def test_the_sandbox_cannot_plant_them(runner: Runner) -> None:
    repo = runner.make_repo({"a.py": "x = 1\n"})
    before = (repo / ".git" / "config").read_text()
    out = runner.cog(["tool", "run_tests", "--sandbox", "on", "--test-command", "git config core.fsmonitor ./x.sh"], repo)
    assert "could not lock config file" in out.stdout or "Read-only file system" in out.stdout, out.stdout
    assert (repo / ".git" / "config").read_text() == before


def _cassette(path: Path) -> str:
    turns = [
        {"type": "cassette", "schemaVersion": 1, "model": "test:attacker"},
        {"type": "turn", "toolCalls": [{"id": "c1", "name": "write_file", "arguments": {"path": "note.txt", "content": "hi\n"}}]},
        {"type": "turn", "toolCalls": [{"id": "c2", "name": "run_tests", "arguments": {}}]},
        {"type": "turn", "text": "Done."},
    ]
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return f"replay:{path}"


PLANT_HOOK = (
    "printf '#!/bin/sh\\ntouch \"$PWD/PWNED-planted-hook\"\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit; true"
)


def test_commit_runs_only_hooks_that_were_there_before_the_run(runner: Runner) -> None:
    repo = runner.make_repo({"a.py": "x = 1\n"})
    legit = repo / ".git" / "hooks" / "commit-msg"
    legit.write_text("#!/bin/sh\ntouch \"$PWD/LEGIT-hook-ran\"\n")
    legit.chmod(0o755)
    runner.own(repo)
    model = _cassette(runner.scratch("cassette") / "c.jsonl")

    out = runner.cog(
        ["edit", "--yes", "--commit", "--commit-hooks", "--sandbox", "off", "--test-command", PLANT_HOOK, "--model", model, "Add a note"], repo
    )
    assert out.returncode == 0, out.stderr
    assert (repo / ".git" / "hooks" / "pre-commit").exists(), "without the sandbox the test planted the hook"
    assert "not running the pre-commit hook" in out.stderr
    assert "committed" in out.stderr
    assert not (repo / "PWNED-planted-hook").exists()
    assert (repo / "LEGIT-hook-ran").exists(), "the hook that was there before the run (unchanged) runs"
    assert runner.git(repo, "log", "-1", "--format=%s").stdout.strip() == "Add a note"

    # plain git runs what the test planted
    (repo / "other.txt").write_text("x\n")
    runner.own(repo)
    runner.git(repo, "add", "other.txt")
    runner.git(repo, "commit", "-q", "-m", "by hand")
    assert (repo / "PWNED-planted-hook").exists()


LINT_HOOK = "#!/bin/sh\nexec ./scripts/lint.sh\n"
#: what a test does to a script an existing hook runs: the hook is unchanged, what it runs is not
CHANGE_LINT = "printf '#!/bin/sh\\ntouch \"$PWD/PWNED-lint\"\\n' > scripts/lint.sh; true"


def test_by_default_commit_runs_no_hook_so_a_script_a_test_changed_does_not_run(runner: Runner) -> None:
    repo = runner.make_repo({"a.py": "x = 1\n", "scripts/lint.sh": "#!/bin/sh\ntrue\n"})
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(LINT_HOOK)
    hook.chmod(0o755)
    runner.own(repo)
    model = _cassette(runner.scratch("cassette") / "c.jsonl")

    out = runner.cog(["edit", "--yes", "--commit", "--sandbox", "off", "--test-command", CHANGE_LINT, "--model", model, "Add a note"], repo)
    assert out.returncode == 0, out.stderr
    assert "PWNED-lint" in (repo / "scripts" / "lint.sh").read_text(), "the test did not change the script: the attack proves nothing"
    assert "commit hooks not run (pre-commit)" in out.stderr and "--commit-hooks" in out.stderr
    assert "committed" in out.stderr and not (repo / "PWNED-lint").exists()

    # the same hook, run as --commit-hooks (or plain git) runs it, runs what the test wrote
    (repo / "other.txt").write_text("x\n")
    runner.own(repo)
    runner.git(repo, "add", "other.txt")
    runner.git(repo, "commit", "-q", "-m", "by hand")
    assert (repo / "PWNED-lint").exists()


@needs_bwrap
def test_with_the_sandbox_the_hook_cannot_even_be_planted(runner: Runner) -> None:
    repo = runner.make_repo({"a.py": "x = 1\n"})
    model = _cassette(runner.scratch("cassette") / "c.jsonl")
    out = runner.cog(["edit", "--yes", "--commit", "--sandbox", "on", "--test-command", PLANT_HOOK, "--model", model, "Add a note"], repo)
    assert out.returncode == 0, out.stderr
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert not (repo / "PWNED-planted-hook").exists()


def with_submodule_slot(runner: Runner) -> Path:
    """A cloned repository with a gitlink at ``sub`` and a ``.gitmodules`` asking git to look
    inside that submodule for changes (``ignore = none`` beats any ``diff.ignoreSubmodules``)."""
    repo = runner.make_repo({"a.txt": "x\n", ".gitmodules": '[submodule "sub"]\n\tpath = sub\n\turl = ./sub\n\tignore = none\n'})
    runner.git(repo, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},sub")
    assert runner.git(repo, "commit", "-q", "-m", "a submodule slot").returncode == 0
    return repo


def plant_submodule(runner: Runner, repo: Path) -> None:
    """What a test can do with the workspace writable: make ``sub`` a repository whose own
    config names a clean filter for every file, then touch its files so git re-reads them."""
    sub = repo / "sub"
    sub.mkdir()
    runner.own(sub)
    script = sub / "x.sh"
    script.write_text(PAYLOAD)
    script.chmod(0o755)
    (sub / ".gitattributes").write_text("* filter=evil\n")
    (sub / "f.txt").write_text("f\n")
    runner.own(sub)
    assert runner.git(sub, "init", "-q").returncode == 0
    runner.git(sub, "config", "filter.evil.clean", f"{script}")
    for key, value in IDENTITY.items():
        runner.git(sub, "config", key, value)
    runner.git(sub, "add", "-A")
    assert runner.git(sub, "commit", "-q", "-m", "planted").returncode == 0
    for p in sub.rglob("PWNED*"):
        p.unlink()
    time.sleep(1.1)  # a newer mtime than the sub-repository's index: git must re-read (and filter) them
    for name in ("f.txt", ".gitattributes"):
        os.utime(sub / name)


def test_a_submodule_a_test_built_runs_nothing_of_its_own_config(runner: Runner) -> None:
    repo = with_submodule_slot(runner)
    plant_submodule(runner, repo)

    runner.git(repo, "status", "--short")
    assert marker_files(repo), "plain git ran no filter inside the submodule: the attack proves nothing"
    for p in repo.rglob("PWNED*"):
        p.unlink()
    for name in ("f.txt", ".gitattributes"):
        os.utime(repo / "sub" / name)

    for tool in (["git_status"], ["git_diff"], ["list_files"], ["search_text", "pattern=x"]):
        out = runner.cog(["tool", *tool, "--json"], repo)
        assert out.returncode == 0, (tool, out.stderr)
        assert marker_files(repo) == [], f"{tool[0]} ran the submodule's filter"
    diff = json.loads(runner.cog(["tool", "git_diff", "--json"], repo).stdout.splitlines()[-1])
    assert "Subproject commit" in diff["result"]  # a moved submodule commit is still shown


def test_programs_planted_on_path_inside_the_workspace_are_not_what_cog_starts(runner: Runner) -> None:
    """A person with the project's virtualenv activated has its bin/ on PATH; a test can write
    ``.venv/bin/git`` (or ``bwrap``) there. cog's own git must not be that file."""
    repo = runner.make_repo({"a.py": "x = 1\n", ".gitignore": ".venv/\n"})
    bin_dir = repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (repo / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    for name in ("git", "bwrap"):
        (bin_dir / name).write_text(PAYLOAD.replace("cat >/dev/null 2>&1 || true", "exit 0"))
        (bin_dir / name).chmod(0o755)
    runner.own(repo)
    env = {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"}

    plain = runner.run(["git", "status"], repo, env=env)
    assert plain.returncode == 0 and (bin_dir / "PWNED-git").exists(), "PATH did not lead to the planted git: the attack proves nothing"
    (bin_dir / "PWNED-git").unlink()

    for tool in (["git_status"], ["git_diff"], ["list_files"], ["search_text", "pattern=x"]):
        out = runner.cog(["tool", *tool, "--json"], repo, env=env)
        assert out.returncode == 0, (tool, out.stderr)
        assert marker_files(repo) == [], f"{tool[0]} started a planted program"
    out = runner.cog(["tool", "run_tests", "--sandbox", "auto", "--test-command", "true"], repo, env=env)
    assert marker_files(repo) == [], "run_tests started the planted bwrap"
