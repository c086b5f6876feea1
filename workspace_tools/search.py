"""search_text: a Python regular expression over the workspace's text files, matches bounded."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cogcli.details import SearchDetails
from cogcli.errors import ErrorCode, ToolCallError
from cogcli.output import tool_output
from cogcli.secrets import REDACTED, KeyLines
from cogcli.tools import Tool, tool
from workspace_tools.listing import matches_glob, workspace_files
from workspace_tools.paths import Workspace
from workspace_tools.secret_files import SecretPolicy
from workspace_tools.textfile import BOM, NotText, SNIFF_BYTES, detect_encoding, os_errors

MAX_SHOWN = 200
#: scanning stops after this many matches (the count then says "at least")
MAX_COUNTED = 10_000
MAX_FILE_BYTES = 4_000_000
MAX_LINE = 300


class SearchTextParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(description="Python regular expression, matched against each line (e.g. 'def \\w+_test').")
    path: str | None = Field(default=None, description="File or folder to search, relative to the workspace root; all of it by default.")
    glob: str | None = Field(default=None, description="Only files matching this glob, e.g. '*.py' or 'src/**/*.ts'.")


def search_text_tool(workspace: Workspace, *, secrets: SecretPolicy | None = None) -> Tool[SearchTextParams]:
    policy = secrets or SecretPolicy()

    @os_errors(workspace)
    def execute(params: SearchTextParams) -> Any:
        try:
            regex = re.compile(params.pattern)
        except re.error as exc:
            raise ToolCallError(
                f"invalid regular expression {params.pattern!r}: {exc}; write a Python `re` pattern "
                "(escape special characters such as ( [ . * with a backslash to match them literally)",
                code=ErrorCode.INVALID_ARGUMENTS,
            ) from None
        base = workspace.resolve(params.path or ".")
        where = workspace.relative(base)
        if not base.exists():
            raise ToolCallError(f"{where} does not exist", code=ErrorCode.FILE_NOT_FOUND)
        if base.is_file():
            policy.check(workspace, params.path or ".", base)
        files = workspace_files(workspace, base)
        if params.glob:
            files = [f for f in files if matches_glob(f, params.glob, base=where)]
        searchable = [f for f in files if not policy.is_secret(f)]
        secret = len(files) - len(searchable)
        files = searchable
        matches: list[dict[str, Any]] = []
        total = searched = skipped = 0
        for rel in files:
            if total >= MAX_COUNTED:
                break
            text = _read_text(workspace, rel, policy)
            if text is _SECRET:
                secret += 1
                continue
            if text is None:
                skipped += 1
                continue
            searched += 1
            key_lines = KeyLines() if "PRIVATE KEY" in text else None
            for number, line in enumerate(text.split("\n"), start=1):
                is_key = key_lines is not None and key_lines(line)
                if regex.search(line.rstrip("\r")) is None:
                    continue
                total += 1
                if len(matches) < MAX_SHOWN:
                    line = REDACTED if is_key else line.rstrip("\r")  # a key's lines, shown apart from their block
                    matches.append({"path": rel, "line": number, "text": _shown(line)})
                if total >= MAX_COUNTED:
                    break
        at_least = "at least " if total >= MAX_COUNTED else ""
        if not matches:
            content = f"No matches for {params.pattern!r} in {searched} file{'s' if searched != 1 else ''}.\n"
        else:
            content = "".join(f"{m['path']}:{m['line']}: {m['text']}\n" for m in matches)
            if total > len(matches):
                content += f"… {at_least}{total - len(matches)} more matches not shown; narrow with path, glob or a stricter pattern.\n"
        if secret:
            content += f"[{secret} file{'s' if secret != 1 else ''} that look like secrets (.env, keys) not searched]\n"
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
            ),
            presentation={"label": "Search", "icon": "search", "detail": params.pattern},
        )

    return tool(
        name="search_text",
        description=(
            "Search the workspace's text files for a Python regular expression, line by line. Prints "
            f"`path:line: text` for each match (at most {MAX_SHOWN}). Files ignored by .gitignore and binary files are skipped."
        ),
        parameters=SearchTextParams,
        execute=execute,
        presentation=lambda p: {"label": "Search", "icon": "search", "detail": p.pattern},
        annotations={"readOnly": True},
    )


_SECRET = "\0secret"


def _shown(line: str) -> str:
    """A matching line as shown, cut to MAX_LINE; credentials go first, as a cut through one would
    leave a piece the run's redaction no longer recognises."""
    if len(line) <= MAX_LINE:
        return line
    from cogcli.secrets import redact

    line = redact(line)[0]
    return line if len(line) <= MAX_LINE else line[:MAX_LINE] + "…"


def _read_text(workspace: Workspace, rel: str, policy: SecretPolicy) -> str | None:
    """A file's text, ``_SECRET`` for a link to a secret, or None when it is binary, too big,
    unreadable or a link out of the workspace."""
    try:
        path = workspace.resolve(rel)
        if policy.is_secret(workspace.relative(path)):
            return _SECRET
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except (ToolCallError, OSError):
        return None
    if b"\x00" in data[:SNIFF_BYTES]:
        return None
    try:
        return data.decode(detect_encoding(data)).removeprefix(BOM)
    except NotText:
        return None
