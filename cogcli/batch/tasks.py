"""The tasks of a batch: one JSON object per line of ``TASKS.jsonl``, checked whole before anything runs.

    {"id": "calc-1", "repo": "../calc", "instruction": "Fix the failing test"}
    {"id": "svc-7", "repo": "https://git.example.com/svc.git", "ref": "v2", "instruction": "…",
     "model": "openai:gpt-4o", "test_command": "pytest -q", "setup": "make deps", "env": ["DATABASE_URL"]}

A task file is hostile text like any other input: an id becomes a file name (``patches/<id>.diff``,
``work/<id>``) only once it matched :data:`ID_PATTERN` (letters, digits, ``.``, ``_``, ``-``; no
``..``; not starting with a dot or dash); a ``ref`` or ``repo`` never starts with ``-`` (git would
read it as an option); ``env`` holds variable names, and a task file is not the person: a name in
it reaches the setup and the tests only when the person allowed it (``cog batch --pass-env NAME``)
and never when it is named like a credential (:func:`task_env`). Every bad line is reported by its number, all
of them at once, before any task starts (:class:`TaskFileError`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from cogcli.contract.errors import ConfigError
from cogcli.shown.visible import visible
from workspace_tools.sandbox.environment import is_variable_name

#: what a task id may be: it names files and folders
ID_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
#: the longest variable name a task's ``env`` may hold
MAX_ENV_NAME = 128
#: a task file bigger than this is refused (a batch is thousands of lines, not gigabytes)
MAX_FILE_BYTES = 64 * 1024 * 1024
#: how many bad lines are listed (the rest are counted)
MAX_PROBLEMS_SHOWN = 20

Text = Annotated[str, StringConstraints(min_length=1, max_length=100_000)]
Short = Annotated[str, StringConstraints(min_length=1, max_length=4096)]


class Task(BaseModel):
    """One line of the task file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    #: a local path (relative to the task file's folder) or a git URL
    repo: Short
    instruction: Text
    #: a commit, branch or tag to check out (default: the repository's HEAD)
    ref: Short | None = None
    #: provider:model for this task (default: --model, then COG_MODEL, then the workspace's)
    model: Short | None = None
    #: the command run_tests runs (instead of the workspace's)
    test_command: Short | None = None
    #: a command run in the checkout before the agent (in the test sandbox)
    setup: Text | None = None
    #: names of variables passed to the setup and the tests
    env: list[str] = Field(default_factory=list, max_length=200)

    @field_validator("id")
    @classmethod
    def _safe_id(cls, value: str) -> str:
        if not ID_PATTERN.fullmatch(value) or ".." in value:
            raise ValueError(
                "an id names files (patches/<id>.diff): use letters, digits, '.', '_' and '-' "
                "(at most 128, not starting with '.' or '-', no '..')"
            )
        return value

    @field_validator("repo", "ref")
    @classmethod
    def _no_option(cls, value: str | None) -> str | None:
        if value is not None and (value.startswith("-") or any(ord(c) < 32 or c == "\x7f" for c in value)):
            raise ValueError("must not start with '-' nor hold control characters")
        return value

    @field_validator("env")
    @classmethod
    def _env_names(cls, names: list[str]) -> list[str]:
        bad = [n for n in names if not is_variable_name(n) or len(n) > MAX_ENV_NAME]
        if bad:
            raise ValueError(f"not variable names: {', '.join(visible(repr(n)) for n in bad[:5])}")
        return names

    @property
    def is_url(self) -> bool:
        return is_git_url(self.repo)

    def source(self, base: Path) -> str:
        """Where to clone from: the URL, or the path resolved against ``base`` (the task file's folder)."""
        return self.repo if self.is_url else str((base / Path(self.repo).expanduser()).resolve())


def task_env(task: Task, allowed: Iterable[str]) -> tuple[list[str], list[str]]:
    """(the names of ``task.env`` its setup and tests get, why each other one is not passed).
    Only names the person allowed (``allowed``: ``cog batch --pass-env``), and never one named like
    a credential (``OPENAI_API_KEY``, ``*_TOKEN``, …), whoever allowed it: the task file asks for it."""
    from workspace_tools.sandbox.environment import is_credential_name

    person = set(allowed)
    passed: list[str] = []
    refused: list[str] = []
    for name in task.env:
        if is_credential_name(name):
            refused.append(f"task {task.id}: env {name} is named like a credential: a task file never passes one to the "
                           "setup or the tests")
        elif name not in person:
            refused.append(f"task {task.id}: env {name} was not passed to the setup and the tests: the task file asks "
                           f"for it, and only the person allows variables (cog batch --pass-env {name})")
        else:
            passed.append(name)
    return passed, refused


def is_git_url(repo: str) -> bool:
    """``https://…``, ``ssh://…``, ``git://…``, ``file://…`` or scp-like ``user@host:path``."""
    return "://" in repo or bool(re.fullmatch(r"[\w.-]+@[\w.-]+:.+", repo))


class TaskFileError(ConfigError):
    """The task file cannot be used: every problem, by line number."""


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "line"
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown field (known: id, repo, instruction, ref, model, test_command, setup, env)"
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


def parse_tasks(text: str, *, name: str = "TASKS.jsonl") -> list[Task]:
    """The tasks of a task file's text. Raises :class:`TaskFileError` listing every bad line
    (not JSON, not an object, a field missing or wrong, an id used twice) by its number."""
    tasks: list[Task] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError) as exc:
            problems.append(f"line {number}: not JSON ({exc})")
            continue
        if not isinstance(raw, dict):
            problems.append(f"line {number}: not a JSON object")
            continue
        try:
            task = Task.model_validate(raw)
        except ValidationError as exc:
            problems.append(f"line {number}: {_describe(exc)}")
            continue
        if task.id in seen:
            problems.append(f"line {number}: id {task.id!r} is also the id of line {seen[task.id]}; ids must be unique")
            continue
        seen[task.id] = number
        tasks.append(task)
    if problems:
        shown = problems[:MAX_PROBLEMS_SHOWN]
        more = len(problems) - len(shown)
        listing = "\n  ".join(visible(p) for p in shown) + (f"\n  … and {more} more" if more else "")
        raise TaskFileError(f"{name}: {len(problems)} bad line{'s' if len(problems) != 1 else ''}, nothing was run:\n  {listing}")
    if not tasks:
        raise TaskFileError(f"{name} holds no tasks: write one JSON object per line, e.g. "
                            '{"id": "t1", "repo": "path/to/repo", "instruction": "Fix the failing test"}')
    return tasks


def read_tasks(path: Path) -> list[Task]:
    """The tasks of the file ``path`` (see :func:`parse_tasks`)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise TaskFileError(f"{visible(str(path))} is {size:,} bytes; a task file may hold at most {MAX_FILE_BYTES:,}")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TaskFileError(f"{visible(str(path))} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise TaskFileError(f"cannot read the task file {visible(str(path))}: {exc.strerror or exc}") from None
    return parse_tasks(text, name=visible(str(path)))
