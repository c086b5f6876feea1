"""``cog edit --commit``: commit exactly the files the run changed, with a message made from the
instruction. Refuses to start on a dirty tree (unless ``--allow-dirty``) so a commit never sweeps
up someone's unrelated work."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cogcli.errors import CogError, ConfigError, ErrorCode

SUBJECT_LENGTH = 72


def _repo(root: Path):  # type: ignore[no-untyped-def]
    import git

    try:
        return git.Repo(root, search_parent_directories=False)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise ConfigError(f"--commit needs a git repository, and {root} is not one (run git init, or drop --commit)") from None


def ensure_committable(root: Path, *, allow_dirty: bool) -> None:
    """Raise :class:`ConfigError` when ``root`` is no git repo, or has uncommitted changes and
    ``allow_dirty`` is off."""
    repo = _repo(root)
    try:
        if allow_dirty:
            return
        dirty = repo.git.status("--porcelain", "--untracked-files=all").splitlines()
    finally:
        repo.close()
    if dirty:
        shown = ", ".join(line[3:] for line in dirty[:5]) + (", …" if len(dirty) > 5 else "")
        raise ConfigError(
            f"--commit refuses to run on a working tree with uncommitted changes ({shown}); "
            "commit or stash them first, or pass --allow-dirty (only the files the run changes are committed)"
        )


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


def commit_changes(
    root: Path, paths: Sequence[str], instruction: str, *, model: str | None = None, thread_id: str | None = None
) -> tuple[str, str]:
    """Stage and commit ``paths`` (and only them); return (commit sha, subject)."""
    import git

    message = commit_message(instruction, model=model, thread_id=thread_id)
    repo = _repo(root)
    try:
        repo.git.add("--all", "--", *paths)
        repo.git.commit("-m", message, "--", *paths)
        return repo.head.commit.hexsha, message.split("\n", 1)[0]
    except git.GitCommandError as exc:
        detail = (exc.stderr or str(exc)).strip().replace("stderr: ", "").strip("'\" \n")
        raise CogError(detail or "git commit failed", code=ErrorCode.GIT_ERROR) from None
    finally:
        repo.close()
