"""search_text: a regular expression over the workspace's text files, line by line, matches bounded.

Patterns run on RE2 (google-re2), an engine whose time grows linearly with the text: no pattern
can make a search hang (``(a+)+$`` on a long line of ``a``s takes microseconds, where Python's
backtracking ``re`` takes longer than the age of the universe). RE2 has no lookaround and no
backreferences; a pattern using them is refused with a message that says so.

Speed: each file is searched whole as bytes (one call into RE2 per file, no decoding); only the
files that match are split into lines. The files come from git's index (see
:mod:`workspace_tools.workspace.listing`), the project's own files first.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.contract.output import tool_output
from cogcli.contract.tool import Tool, tool
from workspace_tools.workspace.envdirs import is_cog_state
from workspace_tools.files.linear_regex import LinePattern, compile_pattern, required_literal
from workspace_tools.host.git import GitNotFound, one_config_read, start_git
from workspace_tools.host.files import FolderCache
from workspace_tools.workspace.listing import Listing, StagedListing, matches_glob
from workspace_tools.workspace.paths import Workspace, shown_name
from workspace_tools.workspace.secret_files import SecretPolicy
from workspace_tools.text.textfile import BOM, NotText, SNIFF_BYTES, detect_encoding, open_in_workspace, os_errors

MAX_SHOWN = 200
#: scanning stops after this many matches (the count then says "at least")
MAX_COUNTED = 10_000
MAX_FILE_BYTES = 4_000_000
MAX_LINE = 300
#: folder names of code a project carries but did not write: searched after the project's own files
VENDORED_DIRS = frozenset(
    {"vendor", "vendored", "_vendor", "third_party", "thirdparty", "third-party", "external", "extern", "site-packages", "dist-packages"}
)


class SearchTextParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when this tool is listed or called

    pattern: str = Field(
        description="Regular expression (Python/RE2 syntax, no lookaround or backreferences), matched against "
        "each line (e.g. 'def \\w+_test')."
    )
    path: str | None = Field(default=None, description="File or folder to search, relative to the workspace root; all of it by default.")
    glob: str | None = Field(default=None, description="Only files matching this glob, e.g. '*.py' or 'src/**/*.ts'.")


def search_order(listing: Listing, *, project_only: bool = False, skip: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The project's own files first (tracked, then untracked), vendored code and minified files
    last; with ``project_only`` just the first of these; files in ``skip`` (searched already)
    left out."""
    vendored: dict[str, bool] = {}

    def is_vendored(folder: str) -> bool:
        found = vendored.get(folder)
        if found is None:
            found = any(part in VENDORED_DIRS for part in folder.split("/"))
            vendored[folder] = found
        return found

    tracked = listing.tracked
    ranked = []
    for rel in listing.files:
        if rel in skip:
            continue
        if rel.endswith((".min.js", ".min.css")) or is_vendored(rel.rpartition("/")[0]):
            rank = 2
        else:
            rank = 0 if not tracked or rel in tracked else 1
        if rank == 0 or not project_only:
            ranked.append((rank, rel))
    ranked.sort()
    return [rel for _, rel in ranked]


class _Search:
    """The matches over files given in batches (each file searched once), bounded."""

    def __init__(self, workspace: Workspace, policy: SecretPolicy, regex: LinePattern, where: str, glob: str | None) -> None:
        self.policy, self.regex, self.where, self.glob = policy, regex, where, glob
        self.reader = _Reader(workspace, policy)
        self.seen: set[str] = set()
        self.matches: list[dict[str, Any]] = []
        self.total = self.searched = self.skipped = self.secret = 0

    def rule_out(self, tracked: list[str], candidates: set[str] | None, secret: set[str]) -> None:
        """Mark the tracked files git grep found no candidate line in as searched (without
        reading them again); ``candidates`` None means git grep could not say. ``secret``: which
        of ``tracked`` are secret files (worked out while git grep ran)."""
        if candidates is None:
            return
        for rel in tracked:
            if rel in candidates or rel in self.seen:
                continue
            if self.glob and not matches_glob(rel, self.glob, base=self.where):
                continue
            self.seen.add(rel)
            if rel in secret:
                self.secret += 1
            else:
                self.searched += 1  # (a tracked link is searched as git stores it: its target's name)

    def run(self, files: list[str]) -> None:
        for rel in files:
            if self.total >= MAX_COUNTED:
                return
            if rel in self.seen:
                continue
            self.seen.add(rel)
            if self.glob and not matches_glob(rel, self.glob, base=self.where):
                continue
            if self.policy.is_secret(rel):
                self.secret += 1
                continue
            data = self.reader.read(rel)
            if data is _SECRET_BYTES:
                self.secret += 1
                continue
            if data is None:
                self.skipped += 1
                continue
            self.searched += 1
            if not self.regex.anywhere(data):
                continue
            for number, line in self.regex.matching_lines(data):
                self.total += 1
                if len(self.matches) < MAX_SHOWN:
                    self.matches.append({"path": rel, "line": number, "text": _shown(line)})
                if self.total >= MAX_COUNTED:
                    return


def search_text_tool(workspace: Workspace, *, secrets: SecretPolicy | None = None) -> Tool[SearchTextParams]:
    policy = secrets or SecretPolicy()

    @os_errors(workspace)
    def execute(params: SearchTextParams) -> Any:
        from cogcli.contract.details import SearchDetails  # imported when a call runs, not when the tool is listed (cog tools)

        regex = compile_pattern(params.pattern)
        base = workspace.resolve(params.path or ".")
        where = workspace.relative(base)
        if not base.exists():
            raise ToolCallError(f"{where} does not exist", code=ErrorCode.FILE_NOT_FOUND)
        if is_cog_state(where):
            raise ToolCallError(
                f"{where} is cog's own state (threads, undo records); the tools do not search it",
                code=ErrorCode.INVALID_ARGUMENTS,
            )
        if base.is_file():
            policy.check(workspace, params.path or ".", base)
        with one_config_read():  # the prefilter's git and the listing's two start together
            prefilter = _start_prefilter(base, params.pattern)  # first: git grep takes longest
            staged = StagedListing(workspace, base)
        if prefilter is not None and not staged.from_git:  # the files come from a walk: grep's are not them
            prefilter.kill()
            prefilter.communicate()
            prefilter = None
        search = _Search(workspace, policy, regex, where, params.glob)
        early = staged.first()  # the tracked files: searched while git still looks for untracked ones
        if prefilter is not None:
            secret = {rel for rel in early if policy.is_secret(rel)}  # while git grep still runs
            search.rule_out(early, _candidates(prefilter, staged.prefix), secret)
        # only what the prefilter left is ordered (on a big tree, a few hundred of thousands of files)
        left = [rel for rel in early if rel not in search.seen]
        try:
            search.run(search_order(Listing(left, tracked=frozenset(left)), project_only=True))
            listing = staged.finish()
            search.run(search_order(listing, skip=search.seen))
        finally:
            search.reader.close()  # the folders it holds open
        matches, total, searched, skipped, secret = search.matches, search.total, search.searched, search.skipped, search.secret
        at_least = "at least " if total >= MAX_COUNTED else ""
        if not matches:
            content = f"No matches for {params.pattern!r} in {searched} file{'s' if searched != 1 else ''}.\n"
        else:
            content = "".join(f"{shown_name(m['path'])}:{m['line']}: {m['text']}\n" for m in matches)
            if total > len(matches):
                content += f"… {at_least}{total - len(matches)} more matches not shown; narrow with path, glob or a stricter pattern.\n"
        if secret:
            content += f"[{secret} file{'s' if secret != 1 else ''} that look{'' if secret != 1 else 's'} like secrets (.env, keys) not searched]\n"
        content += listing.left_out_text()
        return tool_output(
            content,
            details=SearchDetails(
                pattern=params.pattern,
                path=where,
                glob=params.glob,
                matches=matches,
                total=total,
                truncated=total > len(matches),
                files_searched=searched,
                files_skipped=skipped,
                secrets_skipped=secret,
                left_out=[f.as_dict() for f in listing.left_out],
            ),
            presentation={"label": "Search", "icon": "search", "detail": params.pattern},
        )

    return tool(
        kind="search",
        name="search_text",
        read_only=True,
        description=(
            "Search the workspace's text files for a regular expression (Python syntax without lookaround or "
            f"backreferences), line by line. Prints `path:line: text` for each match (at most {MAX_SHOWN}), the "
            "project's own files first. Files ignored by .gitignore, binary files, virtualenvs and tool caches "
            "(.venv, node_modules, …: pass their path to search them) are skipped."
        ),
        parameters=SearchTextParams,
        execute=execute,
        presentation=lambda p: {"label": "Search", "icon": "search", "detail": p.pattern},
        annotations={"readOnly": True},
    )


def _start_prefilter(base: Path, pattern: str) -> subprocess.Popen[bytes] | None:
    """``git grep -l -F`` for the text every match must contain, over the tracked files: git
    reads them with threads in C, so only the files that may match are read here. None when the
    pattern has no such text (or ``base`` is in no repository)."""
    literal = required_literal(pattern)
    if literal is None:
        return None
    text, ignore_case = literal
    try:
        return start_git(base, ["grep", "-l", "-z", "--no-color", "-F", *(["-i"] if ignore_case else []), "-e", text, "--", "."])
    except (OSError, LookupError, GitNotFound):
        return None


def _candidates(run: subprocess.Popen[bytes], prefix: str) -> set[str] | None:
    """The workspace-relative files ``git grep -l`` named, or None when it failed."""
    out, _ = run.communicate()
    if run.returncode not in (0, 1):
        return None
    at = prefix + "/" if prefix else ""
    return {at + os.fsdecode(raw) for raw in out.split(b"\0") if raw}


_SECRET_BYTES = b"\0secret"
_CHECK = b"\0check"
_UTF8_BOM = BOM.encode("utf-8")


def _shown(line: str) -> str:
    """A matching line as shown, cut to MAX_LINE; credentials go first, as a cut through one would
    leave a piece the run's redaction no longer recognises."""
    if len(line) <= MAX_LINE:
        return line
    from cogcli.secrets.redactor import redact

    line = redact(line)[0]
    return line if len(line) <= MAX_LINE else line[:MAX_LINE] + "…"


class _Reader:
    """Reads the listed files as UTF-8 bytes for the engine, fast and without leaving the
    workspace: each file is opened relative to an open descriptor of its folder, kept by a
    :class:`~workspace_tools.host.files.FolderCache` (each folder opened from its parent's, none
    through a link). A folder swapped for a link after it was opened changes nothing (the
    descriptor still names the folder that was there); a link met on the way goes the slow,
    checked way through :meth:`Workspace.resolve`."""

    #: folder descriptors kept open at once (files come grouped by folder)
    MAX_OPEN_DIRS = 64

    def __init__(self, workspace: Workspace, policy: SecretPolicy) -> None:
        self.workspace = workspace
        self.policy = policy
        self._folders = FolderCache(workspace.root, self.MAX_OPEN_DIRS)

    def close(self) -> None:
        self._folders.close()

    def _dir_fd(self, folder: str) -> int | None:
        """An open descriptor of ``folder`` (workspace-relative, '' for the root), reached with no
        link on the way; None when a part of it is a link (or is gone)."""
        return self._folders.get(folder)

    def read(self, rel: str) -> bytes | None:
        """The file's text as UTF-8 bytes (BOM dropped, CRLF as LF, key lines redacted),
        ``_SECRET_BYTES`` for a link to a secret, None when it is binary, too big, unreadable
        or a link out of the workspace."""
        folder, _, name = rel.rpartition("/")
        folder_fd = self._dir_fd(folder)
        data = _CHECK if folder_fd is None else self._read_plain(folder_fd, name)
        if data is _CHECK:
            data = self._read_checked(rel)
        if data is None or data is _SECRET_BYTES:
            return data
        if data.find(b"\0", 0, SNIFF_BYTES) != -1:
            return None
        if not data.isascii():
            data = data.removeprefix(_UTF8_BOM)
            try:
                encoding = detect_encoding(data)
            except NotText:
                return None
            if encoding != "utf-8":
                data = data.decode(encoding).encode("utf-8")
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n")
        if b"PRIVATE KEY" in data:
            data = _without_key_lines(data)
        return data

    @staticmethod
    def _read_plain(folder_fd: int, name: str) -> bytes | None:
        """The bytes of the regular file ``name`` in the open folder, None to skip it, ``_CHECK``
        for a link (or anything odd)."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder_fd)
        except FileNotFoundError:
            return None
        except OSError:
            return _CHECK  # a link (ELOOP): the checked way decides
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
                return None
            chunks = []
            size = 0
            while chunk := os.read(fd, max(info.st_size + 1, 65536)):
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_FILE_BYTES:
                    return None  # grew while read
            return b"".join(chunks)
        except OSError:
            return None
        finally:
            os.close(fd)

    def _read_checked(self, rel: str) -> bytes | None:
        try:
            path = self.workspace.resolve(rel)
            if self.policy.is_secret(self.workspace.relative(path)):
                return _SECRET_BYTES
            # opened folder by folder without following links, as read_file does: a folder swapped
            # for a link after the check reads nothing outside
            fd = open_in_workspace(path, self.workspace.root)
        except (ToolCallError, OSError):
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
                return None
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read(MAX_FILE_BYTES + 1)
            return data if len(data) <= MAX_FILE_BYTES else None
        except OSError:
            return None
        finally:
            os.close(fd)


def _without_key_lines(data: bytes) -> bytes:
    """``data`` with the lines of private key blocks replaced by the redaction marker, so a
    search for a piece of a key neither shows nor finds it."""
    from cogcli.secrets.redactor import REDACTED, KeyLines  # when a file holds a key, not when the tool is listed

    is_key = KeyLines()
    marker = REDACTED.encode()
    return b"\n".join(marker if is_key(line) else line for line in data.split(b"\n"))
