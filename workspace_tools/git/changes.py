"""git_status and git_diff: everything changed in the workspace since HEAD (working tree and
untracked files), as one unified diff for the app and a short stat for the model.

What they leave out, named and counted but never shown: virtualenvs and tool caches
(:mod:`workspace_tools.workspace.envdirs`; an untracked ``.venv`` is one line, as in ``git status``; a
changed tracked file never is, nor a folder holding tracked files), files
that look like secrets (:mod:`workspace_tools.workspace.secret_files`, also when reached through a link), and
whatever does not fit the budget (the result names those files and how to see one). Every git
process goes through :func:`workspace_tools.host.git.run_git` (no program the repository names
runs, and none is handed a FIFO ``.gitignore``: :mod:`workspace_tools.workspace.git_reads`); no gitpython. Here: the change against HEAD and the two tools; untracked files as new ones
are :mod:`workspace_tools.git.untracked`, the key lines hidden in a diff :mod:`workspace_tools.git.keys`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.contract.output import tool_output
from cogcli.contract.tool import Tool, tool
from workspace_tools.workspace.envdirs import EnvDirs, LeftOut, is_cog_state, tracked_folders
from workspace_tools.workspace.git_reads import blocking_git_files, refusal
from workspace_tools.git.keys import hide_key_lines, split_files
from workspace_tools.host.git import GitNotFound, run_git, start_git
from workspace_tools.git.untracked import untracked_entry, untracked_paths
from workspace_tools.workspace.paths import Workspace
from workspace_tools.workspace.secret_files import SecretPolicy

#: the id of git's empty tree: the base of a repository without commits
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
#: diff text the model reads at most from git_diff
MAX_DIFF_CHARS = 40_000
#: diff text the app gets at most in details (whole files only; the rest are named)
MAX_DETAILS_DIFF = 400_000
#: files listed at most in the stat the model reads (details list them all, up to MAX_DETAILS_FILES)
MAX_STAT_FILES = 200
MAX_DETAILS_FILES = 5_000
#: a tracked file with more changed lines than this is named, its diff not produced
MAX_DIFF_LINES = 20_000


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when this tool is listed or called


class GitDiffParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when this tool is listed or called

    path: str | None = Field(
        default=None,
        description="Only this file or folder (relative to the workspace root); the whole workspace by default.",
    )


@dataclass
class Change:
    """The changes of a work tree: its branch, diff and files."""
    branch: str | None
    diff: str
    files: list[dict[str, Any]] = field(default_factory=list)
    #: environment/cache folders with changes, left out
    left_out: list[LeftOut] = field(default_factory=list)
    #: changed files that look like secrets: named, never shown
    secrets: list[str] = field(default_factory=list)
    #: changed files whose diff did not fit MAX_DETAILS_DIFF (in ``files``, not in ``diff``)
    omitted: list[str] = field(default_factory=list)
    #: untracked folders (``new/``) as git status shows them, and how many files each holds
    untracked_dirs: dict[str, int] = field(default_factory=dict)

    @property
    def added(self) -> int:
        return sum(f["added"] for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f["removed"] for f in self.files)

    def details(self) -> dict[str, Any]:
        return {
            "branch": self.branch,
            "diff": self.diff,
            "files": self.files[:MAX_DETAILS_FILES],
            "added": self.added,
            "removed": self.removed,
            "files_total": len(self.files),
            "omitted": self.omitted[:MAX_DETAILS_FILES],
            "left_out": [f.as_dict() for f in self.left_out],
            "secrets_skipped": len(self.secrets),
            "secret_files": self.secrets[:MAX_DETAILS_FILES],
        }

    def stat(self) -> str:
        on = f"On branch {self.branch}" if self.branch else "Detached HEAD"
        notes = self.notes()
        if not self.files:
            return f"{on}. No changes: the workspace matches HEAD.\n" + notes if not notes else f"{on}. No changes shown.\n" + notes
        n = len(self.files)
        lines = [f"{on}. {n:,} file{'s' if n != 1 else ''} changed, +{self.added} -{self.removed} since HEAD:\n"]
        shown_dirs: set[str] = set()
        rows = 0
        for f in self.files:
            if rows >= MAX_STAT_FILES:
                lines.append(f"  … and more: {n:,} files in all; git_diff path=FOLDER shows a part\n")
                break
            folder = _untracked_folder(f, self.untracked_dirs)
            if folder is not None:
                if folder not in shown_dirs:
                    shown_dirs.add(folder)
                    count = self.untracked_dirs[folder]
                    added = sum(g["added"] for g in self.files if _untracked_folder(g, self.untracked_dirs) == folder)
                    lines.append(f"  ?? {folder}  {count} file{'s' if count != 1 else ''}, +{added}\n")
                    rows += 1
                continue
            counts = "binary" if f["binary"] else f"+{f['added']} -{f['removed']}"
            lines.append(f"  {_CODES[f['status']]} {f['path']}  {counts}\n")
            rows += 1
        return "".join(lines) + notes

    def notes(self) -> str:
        """Lines naming what was left out of the change shown."""
        out = []
        if self.secrets:
            named = ", ".join(self.secrets[:10]) + (f" and {len(self.secrets) - 10} more" if len(self.secrets) > 10 else "")
            s = "s" if len(self.secrets) != 1 else ""
            out.append(f"[{len(self.secrets)} changed file{s} that look{'' if s else 's'} like secrets (.env, keys) not shown: {named}]\n")
        if self.left_out:
            named = ", ".join(f.shown for f in self.left_out[:10])
            out.append(f"[not shown: {named}: environments and caches, not the project]\n")
        return "".join(out)


_CODES = {"modified": "M ", "added": "A ", "deleted": "D ", "untracked": "??", "typechange": "T "}


def _untracked_folder(f: dict[str, Any], folders: dict[str, int]) -> str | None:
    if f["status"] != "untracked" or "/" not in f["path"]:
        return None
    path = f["path"]
    for folder in folders:
        if path.startswith(folder):
            return folder
    return None


def _run(args: list[str], workspace: Workspace, *, magic: bool = False) -> subprocess.CompletedProcess[bytes]:
    """``git ARGS`` run safely in the workspace (``magic``: its pathspecs carry ``:(literal)``/
    ``:(exclude,literal)`` themselves), or a GIT_ERROR that names the cause and the fix."""
    try:
        return run_git(workspace.root, args, literal_pathspecs=not magic)
    except LookupError:
        raise _not_a_repository(workspace) from None
    except GitNotFound:
        raise ToolCallError("the git command is not installed; install git to use git_status and git_diff", code=ErrorCode.GIT_ERROR) from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolCallError(f"git could not run: {exc}", code=ErrorCode.GIT_ERROR) from None


def _git(args: list[str], workspace: Workspace, *, magic: bool = False) -> bytes:
    """git's stdout for ``args`` run in the workspace, or a GIT_ERROR that names the cause and the fix."""
    done = _run(args, workspace, magic=magic)
    if done.returncode != 0:
        raise git_failure(workspace, done.stderr)
    return done.stdout


def _not_a_repository(workspace: Workspace) -> ToolCallError:
    return ToolCallError(
        f"the workspace {str(workspace.root)!r} is not in a git repository; git_status and git_diff need one "
        "(use list_files and read_file to look around instead)",
        code=ErrorCode.GIT_ERROR,
    )


def git_failure(workspace: Workspace, stderr: bytes) -> ToolCallError:
    """The error for a failed git command, with what to do about the causes people meet."""
    text = stderr.decode("utf-8", "replace").strip()
    if "dubious ownership" in text:
        fix = next((line.strip() for line in text.splitlines() if "safe.directory" in line), None)
        fix = fix or f"git config --global --add safe.directory {workspace.root}"
        return ToolCallError(
            f"git refuses to read the repository at {str(workspace.root)!r}: it belongs to another user (git calls this "
            f"'dubious ownership'). If the person trusts this repository they can run: {fix}",
            code=ErrorCode.GIT_ERROR,
        )
    if "not a git repository" in text.lower():
        return _not_a_repository(workspace)
    return ToolCallError(f"git failed: {text or 'no message'}", code=ErrorCode.GIT_ERROR)


def session_change(workspace: Workspace, path: str | None = None, *, secrets: SecretPolicy | None = None) -> Change:
    """Working tree and untracked files against HEAD, limited to the workspace folder (or
    ``path`` in it): environments, caches and secrets left out, the diff bounded."""
    policy = secrets or SecretPolicy()
    spec = "."
    inside = ""
    if path not in (None, "", "."):
        resolved = workspace.resolve(path)  # type: ignore[arg-type]
        inside = workspace.relative(resolved)
        spec = f":(literal){inside}"
        if is_cog_state(inside):
            raise ToolCallError(f"{inside} is cog's own state (threads, undo records); the tools do not show it", code=ErrorCode.INVALID_ARGUMENTS)
    tracked_dirs = tracked_folders(workspace.root)
    blocking = blocking_git_files(workspace.root, tracked=tracked_dirs)
    if blocking:  # a FIFO .gitignore or .gitattributes would hold git (and this call) until its timeout
        raise ToolCallError(refusal(blocking), code=ErrorCode.GIT_ERROR)
    head = _run(["rev-parse", "--verify", "-q", "HEAD^{commit}"], workspace)
    if head.returncode != 0 and head.stderr.strip():
        raise git_failure(workspace, head.stderr)
    base = "HEAD" if head.returncode == 0 else EMPTY_TREE
    branch_run = _run(["symbolic-ref", "-q", "--short", "HEAD"], workspace)
    branch = branch_run.stdout.decode("utf-8", "replace").strip() if branch_run.returncode == 0 else None
    common = ["--no-color", "--no-ext-diff", "--no-renames", "--no-textconv", "--relative"]
    # the pathspecs below carry their own :(literal) magic (and :(exclude,literal) further down)
    status_run = start_git(workspace.root, ["diff", base, "--name-status", "-z", *common, "--", spec], literal_pathspecs=False)
    numstat = _git(["diff", base, "--numstat", "-z", *common, "--", spec], workspace, magic=True)
    status_out, _ = status_run.communicate()
    # a folder holding tracked files is never left out (a planted pyvenv.cfg does not hide src/)
    envs = EnvDirs(workspace.root, inside=inside, tracked=tracked_dirs, keep_tracked=True)
    tracked, secret_files = _tracked_changes(status_out, numstat, policy, workspace)
    left: dict[str, int] = {}
    untracked_raw = _git(["ls-files", "--others", "--exclude-standard", "--directory", "--no-empty-directory", "-z", "--", spec], workspace, magic=True)
    untracked, folders = untracked_paths(workspace, untracked_raw, envs, left, inside)
    shown_untracked = []
    for rel in untracked:
        if policy.is_secret(rel) or _links_to_secret(workspace, rel, policy):
            secret_files.append(rel)
        else:
            shown_untracked.append(rel)
    # a file with more changed lines than fit the budget anyway is not even asked of git
    huge = [t["path"] for t in tracked if not t["secret"] and t["added"] + t["removed"] > MAX_DIFF_LINES]
    excluded = [f":(exclude,literal){p}" for p in (*sorted(left), *(t["path"] for t in tracked if t["secret"]), *huge)]
    diff_text = ""
    if len(huge) + sum(1 for t in tracked if t["secret"]) < len(tracked):
        diff_text = _git(["diff", base, *common, "--", spec, *excluded], workspace, magic=True).decode("utf-8", errors="replace")
        diff_text = hide_key_lines(workspace, diff_text, _committed(workspace, base))
    files = [{k: v for k, v in t.items() if k != "secret"} for t in tracked if not t["secret"]]
    diff, omitted = _bounded(diff_text, MAX_DETAILS_DIFF)
    omitted += huge
    for rel in shown_untracked:
        entry, text = untracked_entry(workspace, rel, budget=MAX_DETAILS_DIFF - len(diff))
        files.append(entry)
        if text is None:
            omitted.append(rel)
        else:
            diff += text
    left_out = [LeftOut(p, envs.kind(p), n) for p, n in sorted(left.items()) if not is_cog_state(p)]
    untracked_dirs = {f: sum(1 for r in shown_untracked if r.startswith(f)) for f in folders}
    return Change(branch, diff, files, left_out, sorted(secret_files), omitted, {f: n for f, n in untracked_dirs.items() if n})


def _tracked_changes(
    status_out: bytes, numstat: bytes, policy: SecretPolicy, workspace: Workspace
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every changed tracked file (none left out as an environment: what git tracks is the project's)
    and those of them that look like secrets."""
    statuses: dict[str, str] = {}
    parts = status_out.split(b"\0")
    for code, raw in zip(parts[0::2], parts[1::2]):
        statuses[os.fsdecode(raw)] = {"A": "added", "D": "deleted", "T": "typechange"}.get(code.decode()[:1], "modified")
    tracked: list[dict[str, Any]] = []
    secret_files: list[str] = []
    for record in numstat.split(b"\0"):
        if not record:
            continue
        added, removed, raw = record.split(b"\t", 2)
        rel = os.fsdecode(raw)
        secret = policy.is_secret(rel) or _links_to_secret(workspace, rel, policy)
        if secret:
            secret_files.append(rel)
        binary = added == b"-"
        tracked.append(
            {
                "path": rel,
                "status": statuses.get(rel, "modified"),
                "added": 0 if binary else int(added),
                "removed": 0 if binary else int(removed),
                "binary": binary,
                "secret": secret,
            }
        )
    return tracked, secret_files


def _committed(workspace: Workspace, base: str) -> Callable[[str], bytes | None]:
    """A file's text at ``base`` (None when it is not there: a new file)."""

    def read(rel: str) -> bytes | None:
        old = _run(["show", f"{base}:./{rel}"], workspace)
        return old.stdout if old.returncode == 0 else None

    return read


def _links_to_secret(workspace: Workspace, rel: str, policy: SecretPolicy) -> bool:
    """Whether ``rel`` is a link whose target (inside the workspace) looks like a secret."""
    try:
        if not os.path.islink(os.path.join(workspace.root, rel)):
            return False
        return policy.is_secret(workspace.relative(workspace.resolve(rel)))
    except ToolCallError:
        return False


def _bounded(diff: str, budget: int) -> tuple[str, list[str]]:
    """The per-file parts of ``diff`` that fit ``budget`` (whole files only), and the paths of the rest."""
    if len(diff) <= budget:
        return diff, []
    from unidiff import PatchSet

    kept: list[str] = []
    omitted: list[str] = []
    size = 0
    for part in split_files(diff):
        if size + len(part) <= budget:
            kept.append(part)
            size += len(part)
        else:
            omitted.extend(f.path for f in PatchSet(part))
    return "".join(kept), omitted


def git_status_tool(workspace: Workspace, *, secrets: SecretPolicy | None = None) -> Tool[NoParams]:
    def execute(params: NoParams) -> Any:
        change = session_change(workspace, secrets=secrets)
        return tool_output(
            change.stat(),
            details=change.details(),
            presentation={"label": "Git status", "icon": "git-compare"},
        )

    return tool(
        kind="read",
        name="git_status",
        read_only=True,
        description=(
            "Show which files changed since the last commit (HEAD), untracked ones included, with added/removed "
            "line counts. Virtualenvs, tool caches and secret-looking files are named, not shown."
        ),
        parameters=NoParams,
        execute=execute,
        presentation={"label": "Git status", "icon": "git-compare"},
        annotations={"readOnly": True},
    )


def git_diff_tool(workspace: Workspace, *, secrets: SecretPolicy | None = None) -> Tool[GitDiffParams]:
    def execute(params: GitDiffParams) -> Any:
        change = session_change(workspace, params.path, secrets=secrets)
        text = change.stat()
        if change.diff:
            shown, cut = _bounded(change.diff, MAX_DIFF_CHARS)
            if not shown:  # one file bigger than the budget: its beginning
                shown = change.diff[:MAX_DIFF_CHARS]
                text += "\n" + shown + f"\n…[diff cut at {MAX_DIFF_CHARS:,} of {len(change.diff):,} characters; read_file shows any file in full]\n"
            else:
                text += "\n" + shown
            left = [p for p in (*cut, *change.omitted) if p not in shown]
            if left:
                named = ", ".join(left[:20]) + (f" and {len(left) - 20} more" if len(left) > 20 else "")
                text += (
                    f"\n[the diff of {len(left)} more file{'s' if len(left) != 1 else ''} is over the {MAX_DIFF_CHARS:,}-character "
                    f"budget and not shown: {named}. See one with git_diff path=FILE, or read_file]\n"
                )
        elif change.omitted:
            text += f"\n[diffs not shown (too big): {', '.join(change.omitted[:20])}. See one with git_diff path=FILE, or read_file]\n"
        return tool_output(text, details=change.details(), presentation={"label": "Git diff", "icon": "git-compare"})

    return tool(
        kind="read",
        name="git_diff",
        read_only=True,
        description=(
            "Show everything changed since the last commit (HEAD) as a unified diff, untracked files included "
            "(optionally only under path). Virtualenvs, tool caches and secret-looking files are named, not shown."
        ),
        parameters=GitDiffParams,
        execute=execute,
        presentation={"label": "Git diff", "icon": "git-compare"},
        annotations={"readOnly": True},
    )
