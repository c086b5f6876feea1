"""A task's own checkout: a fresh clone of its repository at its ref, and the change it made, as a patch.

The source is never touched: a path is cloned with ``git clone --local --no-hardlinks`` (its
objects copied, not linked: a test in the checkout writing ``.git/objects`` cannot reach the
source's), a URL with ``git clone``. Nothing the repository names runs: the clone runs no hooks and
no ``ext::`` transport, and every git after it goes through :func:`workspace_tools.host.git.run_git`
(no hooks, fsmonitor, filters, external diff …), as the checkout is the agent's and its tests' to
write.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path

from cogcli.contract.errors import CogError

#: a clone may take this long (a big repository over a slow link)
CLONE_TIMEOUT = 1800.0


class CheckoutError(CogError):
    """The task's repository could not be cloned or its ref checked out."""

    code = "CHECKOUT_FAILED"


def _said(done: subprocess.CompletedProcess[bytes]) -> str:
    text = (done.stderr or done.stdout or b"").decode("utf-8", "replace").strip()
    return text[-2000:] or f"exit {done.returncode}"


def _clone_env() -> dict[str, str]:
    from workspace_tools.host.git import KEPT_GIT_VARIABLES

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in KEPT_GIT_VARIABLES}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", GIT_CONFIG_PARAMETERS="")
    return env


def remove_tree(path: Path) -> None:
    """Remove ``path`` (a checkout a test may have left read-only folders in); never follows a link."""

    def retry(func, failed, exc):  # type: ignore[no-untyped-def]
        parent = os.path.dirname(failed)
        try:
            os.chmod(parent, stat.S_IRWXU)
            func(failed)
        except OSError:
            pass

    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path, onerror=retry)


def remove_tree_at(dir_fd: int, name: str) -> None:
    """Remove the entry ``name`` of the folder ``dir_fd`` (a task's old checkout): a link or file is
    unlinked, a folder removed through descriptors (``shutil.rmtree`` with ``dir_fd`` never
    follows a link inside it, and its folder was opened without following one)."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=dir_fd)
        return

    def retry(func, failed, exc):  # type: ignore[no-untyped-def]
        try:  # a folder a test left read-only: its own, inside the checkout
            fd = os.open(os.path.dirname(failed) or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
        except OSError:
            return
        try:
            os.chmod(fd, stat.S_IRWXU)
        except OSError:
            pass
        finally:
            os.close(fd)
        try:
            func(failed, dir_fd=dir_fd) if func in (os.rmdir, os.unlink) else func(failed)
        except (OSError, TypeError):
            pass

    shutil.rmtree(name, dir_fd=dir_fd, onerror=retry)


def clone(source: str, dest: Path, *, local: bool, ref: str | None, timeout: float = CLONE_TIMEOUT) -> str:
    """Clone ``source`` into ``dest`` (removed first if it is there: a re-run starts afresh) and
    check out ``ref`` (a commit, branch or tag; default: the source's HEAD) detached. Returns the
    commit checked out. Raises :class:`CheckoutError` saying what failed."""
    from workspace_tools.host.git import GitNotFound, _git, run_git

    remove_tree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if local and not Path(source).is_dir():
        raise CheckoutError(f"the repository {source} does not exist (a path in the task file is relative to the task file's folder)")
    try:
        git = _git()
    except GitNotFound as exc:
        raise CheckoutError(str(exc)) from None
    argv = [git, "-c", f"core.hooksPath={os.devnull}", "-c", "protocol.ext.allow=never", "clone", "--quiet", "--no-checkout"]
    if local:
        argv += ["--local", "--no-hardlinks"]
    argv += ["--", source, str(dest)]
    try:
        done = subprocess.run(argv, env=_clone_env(), capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise CheckoutError(f"cloning {source} took longer than {timeout:.0f} s") from None
    if done.returncode != 0:
        raise CheckoutError(f"git clone {source} failed: {_said(done)}")
    commit = None
    for candidate in ([ref, f"origin/{ref}"] if ref else ["HEAD"]):
        found = run_git(dest, ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{candidate}^{{commit}}"])
        if found.returncode == 0:
            commit = found.stdout.decode().strip()
            break
    if commit is None:
        what = f"the ref {ref!r}" if ref else "a commit (HEAD)"
        raise CheckoutError(f"{source} has no {what}: name a commit, branch or tag of it in \"ref\"")
    done = run_git(dest, ["checkout", "--quiet", "--detach", commit])
    if done.returncode != 0:
        raise CheckoutError(f"git checkout {commit} in the clone of {source} failed: {_said(done)}")
    return commit


def make_patch(checkout: Path, base: str, paths: Sequence[str]) -> bytes:
    """The run's change against ``base``: the files it changed (``paths``, relative to the
    checkout; new and binary files included), as ``git apply`` takes it. Only those files: what
    ``setup`` made (a virtualenv, a build) and what the tests wrote are not the task's change."""
    from workspace_tools.host.git import run_git

    if not paths:
        return b""
    # literal pathspecs (run_git's default): a file named '*' is that file; --force: a file the run
    # changed is its change even where .gitignore would leave it out
    added = run_git(checkout, ["add", "--all", "--force", "--", *paths], timeout=600)
    if added.returncode != 0:
        raise CheckoutError(f"git add in {checkout} failed: {_said(added)}")
    diff = run_git(checkout, ["diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", base, "--", *paths], timeout=600)
    if diff.returncode != 0:
        raise CheckoutError(f"git diff in {checkout} failed: {_said(diff)}")
    return diff.stdout
