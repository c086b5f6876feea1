#!/usr/bin/env python3
"""A PreToolUse hook that blocks edits to protected paths — for cog and, unchanged, for Claude Code.

It reads the event from stdin (one JSON object), finds the file the call would write
(``tool_input.path`` for cog's edit_file / write_file, ``tool_input.file_path`` for Claude Code's
Edit / Write), and when the file matches a protected pattern exits 2 with the reason on stderr:
the call is not run and the model reads why. Any other call goes on (exit 0, no output).

    # ~/.config/cog/config.toml
    [[hooks.PreToolUse]]
    matcher = "edit_file|write_file"
    command = "python3 ~/cog-hooks/protect_paths.py"
    timeout = 10

The protected patterns are glob-style, relative to the project root (``*`` stays in one folder,
``**`` crosses folders). Override them with ``PROTECTED_PATHS="migrations/**:.env*"`` (colon-separated).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import sys

DEFAULT = (".env", ".env.*", "**/.env", "**/.env.*", ".git/**", ".github/workflows/**", "migrations/**",
           "**/migrations/**", "*.lock", "package-lock.json", "secrets/**")


def patterns() -> list[str]:
    given = os.environ.get("PROTECTED_PATHS", "")
    return [p for p in given.split(":") if p] if given else list(DEFAULT)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """``**`` any folders, ``*`` within one folder (fnmatch's ``*`` crosses ``/``)."""
    out = []
    for part in re.split(r"(\*\*/?)", pattern):
        if part.startswith("**"):
            out.append("(?:.*/)?" if part.endswith("/") else ".*")
        else:
            out.append(fnmatch.translate(part).removeprefix("(?s:").removesuffix(")\\Z").replace(".*", "[^/]*"))
    return re.compile("".join(out) + r"\Z")


def relative(path: str, root: str) -> str | None:
    """``path`` relative to the project root, normalized; None when it is outside it."""
    full = os.path.normpath(os.path.join(root, path))
    rel = os.path.relpath(full, root)
    return None if rel == ".." or rel.startswith("../") else rel


def main() -> int:
    try:
        event = json.load(sys.stdin)
    except ValueError:
        print("protect_paths: the hook's input was not JSON", file=sys.stderr)
        return 1  # a warning: the run goes on
    tool_input = event.get("tool_input") or {}
    path = tool_input.get("path") or tool_input.get("file_path")
    if not isinstance(path, str) or not path:
        return 0
    root = os.environ.get("COG_PROJECT_DIR") or os.environ.get("CLAUDE_PROJECT_DIR") or event.get("cwd") or os.getcwd()
    rel = relative(path, root)
    if rel is None:
        print(f"{path} is outside the project; this project's hooks allow edits inside it only", file=sys.stderr)
        return 2
    for pattern in patterns():
        if glob_regex(pattern).match(rel):
            print(f"{rel} is protected (it matches {pattern!r}); do not edit it — say what change it needs instead", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
