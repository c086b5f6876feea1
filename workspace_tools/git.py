"""git_status and git_diff: everything changed in the workspace since HEAD (working tree and
untracked files), as one unified diff for the app and a short stat for the model.

git runs through :func:`workspace_tools.gitrun.run_git`: no program the repository names runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from cogcli.errors import ErrorCode, ToolCallError
from cogcli.output import tool_output
from cogcli.tools import Tool, tool
from workspace_tools.diffs import file_header, format_hunks, quote_path, text_blocks
from workspace_tools.paths import Workspace
from workspace_tools.textfile import BOM, NotText, TextFile, new_file_mode

#: the id of git's empty tree: the base of a repository without commits
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
#: diff text the model reads at most from git_diff (the app always gets all of it in details)
MAX_DIFF_CHARS = 40_000


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass
class Change:
    branch: str | None
    diff: str
    files: list[dict[str, Any]] = field(default_factory=list)

    @property
    def added(self) -> int:
        return sum(f["added"] for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f["removed"] for f in self.files)

    def details(self) -> dict[str, Any]:
        return {"branch": self.branch, "diff": self.diff, "files": self.files, "added": self.added, "removed": self.removed}

    def stat(self) -> str:
        on = f"On branch {self.branch}" if self.branch else "Detached HEAD"
        if not self.files:
            return f"{on}. No changes: the workspace matches HEAD.\n"
        n = len(self.files)
        lines = [f"{on}. {n} file{'s' if n != 1 else ''} changed, +{self.added} -{self.removed} since HEAD:\n"]
        for f in self.files:
            counts = "binary" if f["binary"] else f"+{f['added']} -{f['removed']}"
            lines.append(f"  {_CODES[f['status']]} {f['path']}  {counts}\n")
        return "".join(lines)


_CODES = {"modified": "M ", "added": "A ", "deleted": "D ", "untracked": "??"}


def session_change(workspace: Workspace) -> Change:
    """Working tree and untracked files against HEAD, limited to the workspace folder."""
    from workspace_tools.gitrun import GitNotFound, run_git

    def git(*args: str) -> bytes:
        done = run_git(workspace.root, args)
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", errors="replace").strip()
            raise ToolCallError(f"git failed: {said or f'git {args[0]} exit {done.returncode}'}", code=ErrorCode.GIT_ERROR)
        return done.stdout

    try:
        valid = run_git(workspace.root, ["rev-parse", "-q", "--verify", "HEAD^{commit}"]).returncode == 0
        base = "HEAD" if valid else EMPTY_TREE
        ref = run_git(workspace.root, ["symbolic-ref", "-q", "--short", "HEAD"])
        branch = ref.stdout.decode("utf-8", errors="replace").strip() if ref.returncode == 0 else None
        raw = git("diff", base, "--no-color", "--no-ext-diff", "--no-renames", "--no-textconv", "--relative", "--", ".")
        tracked = raw.decode("utf-8", errors="replace")
        untracked_raw = git("ls-files", "--others", "--exclude-standard", "-z", "--", ".")
        untracked = sorted(p.decode("utf-8", errors="surrogateescape") for p in untracked_raw.split(b"\0") if p)
    except LookupError:
        raise ToolCallError(
            f"the workspace {str(workspace.root)!r} is not in a git repository; git_status and git_diff need one "
            "(use list_files and read_file to look around instead)",
            code=ErrorCode.GIT_ERROR,
        ) from None
    except GitNotFound:
        raise ToolCallError("the git command is not installed", code=ErrorCode.GIT_ERROR) from None
    diff = tracked + "".join(_untracked_diff(workspace, rel) for rel in untracked)
    return Change(branch, diff, _file_stats(diff, set(untracked)))


def _untracked_diff(workspace: Workspace, rel: str) -> str:
    """An untracked file as git shows a new one (``git add -N`` then ``git diff``)."""
    try:
        path = workspace.resolve(rel)
        data = path.read_bytes()
    except (ToolCallError, OSError):
        return ""  # a link out of the workspace, or gone meanwhile: not part of the change we show
    mode = path.stat().st_mode
    try:
        file = TextFile.decode(data)
    except NotText:
        a, b = quote_path(f"a/{rel}"), quote_path(f"b/{rel}")
        return f"diff --git {a} {b}\nnew file mode {'100755' if mode & 0o111 else '100644'}\nBinary files /dev/null and {b} differ\n"
    text = (BOM if file.bom else "") + file.text
    hunks = format_hunks(text_blocks("", text), disk_line=file.disk_line)
    return file_header(rel, new_mode=mode & 0o777 or new_file_mode(), empty=not hunks) + hunks


def _file_stats(diff: str, untracked: set[str]) -> list[dict[str, Any]]:
    if not diff:
        return []
    from unidiff import PatchSet

    files = []
    for f in PatchSet(diff):
        if f.path in untracked:
            status = "untracked"
        elif f.is_added_file:
            status = "added"
        elif f.is_removed_file:
            status = "deleted"
        else:
            status = "modified"
        files.append(
            {"path": f.path, "status": status, "added": f.added, "removed": f.removed, "binary": bool(f.is_binary_file)}
        )
    return files


def git_status_tool(workspace: Workspace) -> Tool[NoParams]:
    def execute(params: NoParams) -> Any:
        change = session_change(workspace)
        return tool_output(
            change.stat(),
            details=change.details(),
            presentation={"label": "Git status", "icon": "git-compare"},
        )

    return tool(
        name="git_status",
        description="Show which files changed since the last commit (HEAD), untracked ones included, with added/removed line counts.",
        parameters=NoParams,
        execute=execute,
        presentation={"label": "Git status", "icon": "git-compare"},
        annotations={"readOnly": True},
    )


def git_diff_tool(workspace: Workspace) -> Tool[NoParams]:
    def execute(params: NoParams) -> Any:
        change = session_change(workspace)
        text = change.stat()
        if change.diff:
            shown = change.diff[:MAX_DIFF_CHARS]
            text += "\n" + shown
            if len(change.diff) > MAX_DIFF_CHARS:
                text += f"\n…[diff cut at {MAX_DIFF_CHARS:,} of {len(change.diff):,} characters; read_file shows any file in full]\n"
        return tool_output(text, details=change.details(), presentation={"label": "Git diff", "icon": "git-compare"})

    return tool(
        name="git_diff",
        description="Show everything changed since the last commit (HEAD) as a unified diff, untracked files included.",
        parameters=NoParams,
        execute=execute,
        presentation={"label": "Git diff", "icon": "git-compare"},
        annotations={"readOnly": True},
    )
