"""``cog edit --commit``: commit exactly the files the run changed, with a message made from the
instruction. Refuses to start on a dirty tree (unless ``--allow-dirty``) so a commit never sweeps
up someone's unrelated work.

git runs through :func:`workspace_tools.host.git.run_git` (no repository-named program runs). The
repository's own commit hooks do not run by default: a hook runs workspace files (a lint script,
``.venv/bin/pre-commit``, ``node_modules/.bin/lint-staged``) that the run's tests, or the model's
edits, could have changed, and it would run them unsandboxed. With ``--commit-hooks`` they run
when they were there before the run and are unchanged: :func:`ensure_committable` fingerprints
them, :func:`commit_changes` runs the unchanged ones and says which it skipped.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cogcli.contract.errors import CogError, ConfigError, ErrorCode

SUBJECT_LENGTH = 72
#: the hooks ``git add`` and ``git commit`` may run
COMMIT_HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "pre-auto-gc",
                "post-index-change", "reference-transaction", "post-rewrite")


@dataclass(frozen=True)
class HookSnapshot:
    """The repository's commit hooks as they were before the run: name → sha256 of the file."""

    folder: Path | None
    hooks: dict[str, str] = field(default_factory=dict)


def _git(root: Path, *args: str, hooks: Path | None = None) -> str:
    from workspace_tools.host.git import GitNotFound, run_git

    try:
        done = run_git(root, args, hooks=hooks)
    except LookupError:
        raise ConfigError(f"--commit needs a git repository, and {root} is not one (run git init, or drop --commit)") from None
    except GitNotFound:
        raise ConfigError("--commit needs git, and the git command is not installed") from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
        raise CogError(detail or f"git {args[0]} failed (exit {done.returncode})", code=ErrorCode.GIT_ERROR)
    return done.stdout.decode("utf-8", "replace")


def _hooks_folder(root: Path) -> Path | None:
    """Where git looks for this repository's hooks (``core.hooksPath`` or ``<git-dir>/hooks``)."""
    from workspace_tools.host.git import run_git

    # run_git sets core.hooksPath itself on the command line: ask the configuration files instead
    for scope in ("--local", "--global", "--system"):
        done = run_git(root, ["config", scope, "--path", "--get", "core.hooksPath"])
        if done.returncode == 0 and done.stdout.strip():
            path = Path(done.stdout.decode("utf-8", "replace").strip()).expanduser()
            return path if path.is_absolute() else root / path
    common = run_git(root, ["rev-parse", "--git-common-dir"])
    if common.returncode != 0:
        return None
    git_common = Path(common.stdout.decode("utf-8", "replace").strip())
    return (git_common if git_common.is_absolute() else root / git_common) / "hooks"


def snapshot_hooks(root: Path) -> HookSnapshot:
    """Fingerprint the executable commit hooks of the repository at ``root``."""
    folder = _hooks_folder(root)
    found: dict[str, str] = {}
    if folder is not None:
        for name in COMMIT_HOOKS:
            path = folder / name
            if path.is_file() and os.access(path, os.X_OK):
                found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return HookSnapshot(folder, found)


def ensure_committable(root: Path, *, allow_dirty: bool, hooks: bool = False) -> HookSnapshot | None:
    """Raise :class:`ConfigError` when ``root`` is no git repo, or has uncommitted changes and
    ``allow_dirty`` is off. With ``hooks`` (``--commit-hooks``), returns the hooks as they are now
    (before the run); without, None: the commit will run none."""
    try:
        dirty = _git(root, "status", "--porcelain", "--untracked-files=all").splitlines()
    except CogError as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"--commit: git status failed: {exc.message}") from None
    before = snapshot_hooks(root) if hooks else None
    if dirty and not allow_dirty:
        shown = ", ".join(line[3:] for line in dirty[:5]) + (", …" if len(dirty) > 5 else "")
        raise ConfigError(
            f"--commit refuses to run on a working tree with uncommitted changes ({shown}); "
            "commit or stash them first, or pass --allow-dirty (only the files the run changes are committed)"
        )
    return before


def commit_message(instruction: str, *, model: str | None = None, thread_id: str | None = None) -> str:
    """Subject: the instruction's first line (cut to 72 characters); body: the whole instruction
    when it is longer, and where the change came from."""
    text = instruction.strip()
    first = " ".join(text.splitlines()[0].split()) if text else "cog edit"
    subject = first if len(first) <= SUBJECT_LENGTH else first[: SUBJECT_LENGTH - 1].rstrip() + "…"
    body = [text] if text != subject else []
    made = "Made with cog edit" + (f" ({model}" + (f", thread {thread_id})" if thread_id else ")") if model else "")
    body.append(made + ".")
    return subject + "\n\n" + "\n\n".join(body) + "\n"


def _approved_hooks(root: Path, before: HookSnapshot, staging: Path) -> tuple[Path | None, list[str]]:
    """A folder holding copies of the hooks unchanged since ``before`` (None: run none), and the
    names of the hooks skipped because the run added or changed them."""
    now = snapshot_hooks(root)
    allowed = before.hooks
    skipped = sorted(name for name, digest in now.hooks.items() if allowed.get(name) != digest)
    keep = [name for name, digest in now.hooks.items() if allowed.get(name) == digest]
    if not keep or now.folder is None:
        return None, skipped
    for name in keep:
        data = (now.folder / name).read_bytes()
        if hashlib.sha256(data).hexdigest() != allowed[name]:  # changed while we looked: do not run it
            skipped.append(name)
            continue
        target = staging / name
        target.write_bytes(data)
        target.chmod(0o755)
    return staging, sorted(skipped)


def commit_changes(
    root: Path,
    paths: Sequence[str],
    instruction: str,
    *,
    model: str | None = None,
    thread_id: str | None = None,
    hooks: HookSnapshot | None = None,
) -> tuple[str, str]:
    """Stage and commit ``paths`` (and only them); return (commit sha, subject). The hooks in
    ``hooks`` (taken before the run, with ``--commit-hooks``) that are unchanged run and the
    others are named on stderr; with no snapshot none runs, and stderr says so when there are some."""
    message = commit_message(instruction, model=model, thread_id=thread_id)
    staging = Path(tempfile.mkdtemp(prefix="cog-hooks-"))
    try:
        if hooks is not None:
            folder, skipped = _approved_hooks(root, hooks, staging)
        else:
            folder, skipped = None, []
            present = sorted(snapshot_hooks(root).hooks)
            if present:
                sys.stderr.write(
                    f"cog: commit hooks not run ({', '.join(present)}): they would run unsandboxed files the run's "
                    "tests or edits could have changed; review the change and commit yourself, or pass --commit-hooks\n"
                )
        for name in skipped:
            sys.stderr.write(
                f"cog: not running the {name} hook: it was added or changed during the run "
                "(review it, then commit yourself)\n"
            )
        _git(root, "add", "--all", "--", *paths, hooks=folder)
        _git(root, "commit", "-m", message, "--", *paths, hooks=folder)
        sha = _git(root, "rev-parse", "HEAD").strip()
        return sha, message.split("\n", 1)[0]
    except ConfigError as exc:
        raise CogError(exc.message, code=ErrorCode.GIT_ERROR) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
