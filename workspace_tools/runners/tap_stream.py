"""TAP, the Test Anything Protocol (versions 12, 13 and 14), read line by line as a producer writes
it: tape, node-tap, mocha's ``tap`` reporter, ``node --test --test-reporter=tap`` and any other.

What it reads, as the TAP 14 specification defines it (testanything.org):

- the version line ``TAP version 13``, the plan ``1..N`` (``1..0 # SKIP why``: nothing to run);
- test points ``ok 3 - description`` / ``not ok 4 description # TODO why`` / ``… # SKIP why``
  (number and description optional; ``\\#`` is a literal ``#``; the directive's case is free);
- a YAML diagnostic block after a point, between ``---`` and ``...`` indented two spaces past it
  (``message``, ``operator``, ``expected``, ``actual``, ``at``, ``stack``, ``location``…): the
  subset producers write — mappings, quoted and plain scalars, ``|``/``>`` block scalars, lists;
- subtests (TAP 14): lines indented four spaces per level, usually after ``# Subtest: name``,
  closed by the parent's own test point;
- ``Bail out! reason``, ``# comments`` (tape names each test in one), ``pragma``, anything else
  (the producer's own output) kept as unknown lines.

:class:`TapStream` is fed one line at a time and returns each test point once it is complete (its
diagnostic block read): a run's updates stream as the producer writes. Nothing here raises on bad
input; what does not parse is simply not TAP.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_VERSION = re.compile(r"^TAP version (\d+)\s*$", re.IGNORECASE)
_PLAN = re.compile(r"^1\.\.(\d+)\s*(?:#\s*(.*))?$")
_POINT = re.compile(r"^(not ok|ok)\b\s*(\d+)?\s*(?:-\s*)?(.*)$")
_DIRECTIVE = re.compile(r"(?<!\\)#\s*(skip|todo)\S*(?:\s+(.*))?$", re.IGNORECASE)
_BAIL = re.compile(r"^Bail out!\s*(.*)$")
_SUBTEST = re.compile(r"^#\s*Subtest(?::\s*(.*))?$")
_LOCATION = re.compile(r"(?:\(|^|\s|file://)([^\s():]*[^\s():/]):(\d+)(?::\d+)?\)?\s*$")


@dataclass
class TapPoint:
    """One test point, with where it sits: the names of the subtests around it (``path``)."""

    ok: bool
    number: int | None
    description: str
    #: ``skip`` or ``todo`` (lowercase), or None
    directive: str | None = None
    reason: str = ""
    #: the YAML diagnostic block, parsed (see :func:`read_yaml`), and its text as written
    diagnostics: dict[str, Any] = field(default_factory=dict)
    diagnostics_text: str = ""
    path: list[str] = field(default_factory=list)
    depth: int = 0
    #: the comment lines (``# name``) seen since the point before it at its depth (tape's test names)
    comments: list[str] = field(default_factory=list)
    #: it closes a subtest: the points inside it were reported before it
    has_subtests: bool = False

    @property
    def outcome(self) -> str:
        """``passed``, ``failed`` or ``skipped`` (a ``# TODO`` point never fails a run, ``# SKIP`` did not run)."""
        if self.directive is not None:
            return "skipped"
        return "passed" if self.ok else "failed"


class TapStream:
    """Fed a producer's output line by line (:meth:`feed`), :meth:`end` at its end."""

    def __init__(self) -> None:
        self.version: int | None = None
        #: the plan of the outermost level: (count, skip reason)
        self.plan: tuple[int, str] | None = None
        self.bailed: str | None = None
        #: top-level test points seen (the plan counts those)
        self.top_points = 0
        #: lines that are no TAP (the producer's own output)
        self.unknown = 0
        self.seen_tap = False
        self._pending: TapPoint | None = None
        self._yaml: list[str] | None = None
        self._yaml_indent = 0
        self._names: dict[int, str] = {}  # depth -> the subtest being read there
        self._has_children: set[int] = set()
        self._comments: dict[int, list[str]] = {}

    def feed(self, line: str) -> list[TapPoint]:
        """The test points ``line`` completes (usually none or one)."""
        line = line.rstrip("\r\n")
        done: list[TapPoint] = []
        if self._yaml is not None:
            stripped = line.strip()
            if stripped == "..." and _indent(line) <= self._yaml_indent:
                self._close_yaml()
                return done
            if stripped and _indent(line) < self._yaml_indent:  # a block never closed: read what came
                self._close_yaml()
            else:
                self._yaml.append(line)
                return done
        indent = _indent(line)
        depth, body = indent // 4, line.strip()
        if self._pending is not None and body == "---" and self._pending.depth == depth and indent == depth * 4 + 2:
            self._yaml, self._yaml_indent = [], indent
            return done
        if not body:
            return done
        done += self._flush()
        if depth == 0 and (found := _VERSION.match(body)):
            self.version, self.seen_tap = int(found.group(1)), True
        elif found := _BAIL.match(body):
            self.bailed, self.seen_tap = found.group(1).strip(), True
        elif found := _SUBTEST.match(body):
            self._names[depth + 1] = (found.group(1) or "").strip()
            self.seen_tap = True
        elif found := _PLAN.match(body):
            if depth == 0:
                self.plan = (int(found.group(1)), (found.group(2) or "").strip())
            if depth:
                self._has_children.add(depth - 1)
            self.seen_tap = True
        elif found := _POINT.match(body):
            self._pending = self._point(found, depth)
            self.seen_tap = True
        elif body.startswith("#"):
            self._comments.setdefault(depth, []).append(body.lstrip("#").strip())
        elif body.startswith("pragma "):
            pass
        else:
            self.unknown += 1
        return done

    def end(self) -> list[TapPoint]:
        """The points still open when the stream ended."""
        if self._yaml is not None:
            self._close_yaml()
        return self._flush()

    def left_comments(self) -> list[str]:
        """The outermost level's comments after its last test point (taken: asked once, at the end)."""
        return self._comments.pop(0, [])

    def _point(self, found: re.Match[str], depth: int) -> TapPoint:
        rest = found.group(3) or ""
        directive, reason = None, ""
        marked = _DIRECTIVE.search(rest)
        if marked:
            directive, reason = marked.group(1).lower(), (marked.group(2) or "").strip()
            rest = rest[: marked.start()]
        description = re.sub(r"\\([\\#])", r"\1", rest.strip())
        if depth == 0:
            self.top_points += 1
        # a point at this depth closes the subtest whose points (or plan) came one level deeper
        closes = depth in self._has_children
        path = [self._names[d] for d in sorted(self._names) if d <= depth and self._names[d]]
        for d in [d for d in self._names if d > depth]:
            del self._names[d]
        self._has_children = {d for d in self._has_children if d < depth}
        comments = self._comments.pop(depth, [])
        for d in [d for d in self._comments if d > depth]:
            del self._comments[d]
        return TapPoint(ok=found.group(1) == "ok", number=int(found.group(2)) if found.group(2) else None,
                        description=description, directive=directive, reason=reason, path=path, depth=depth,
                        comments=comments, has_subtests=closes)

    def _close_yaml(self) -> None:
        lines, self._yaml = self._yaml or [], None
        if self._pending is None:
            return
        cut = self._yaml_indent
        text = "\n".join(line[cut:] if line[:cut].strip() == "" else line.lstrip() for line in lines)
        self._pending.diagnostics_text = text
        self._pending.diagnostics = read_yaml(text)

    def _flush(self) -> list[TapPoint]:
        point, self._pending = self._pending, None
        if point is not None and point.depth > 0:
            self._has_children.add(point.depth - 1)
        return [point] if point is not None else []

    def problems(self) -> list[str]:
        """What the stream says went wrong beyond its failed points: a bail out, a plan not kept."""
        out = []
        if self.bailed is not None:
            out.append(f"the tests bailed out{': ' + self.bailed if self.bailed else ''}")
        if self.plan is not None and self.plan[0] != self.top_points and self.bailed is None:
            out.append(f"the plan said {self.plan[0]} tests and {self.top_points} ran")
        return out


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _scalar(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        inner = text[1:-1]
        return inner.replace("''", "'") if text[0] == "'" else inner.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
    if text in ("~", "null"):
        return None
    return text


def read_yaml(text: str) -> dict[str, Any]:
    """The subset of YAML that TAP producers write in diagnostics: nested mappings, plain and quoted
    scalars (kept as text, as the producer printed them), block scalars and simple lists. Anything
    else is kept as text under its key; never raises."""
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    least = min((_indent(line) for line in lines), default=0)
    lines = [line[least:] for line in lines]
    try:
        value, _ = _block(lines, 0, 0)
    except (IndexError, ValueError):
        return {"text": text}
    return value if isinstance(value, dict) else {"text": text}


def _block(lines: list[str], i: int, indent: int) -> tuple[Any, int]:
    if i < len(lines) and lines[i].strip().startswith("- ") or (i < len(lines) and lines[i].strip() == "-"):
        items: list[Any] = []
        while i < len(lines) and _indent(lines[i]) == indent and lines[i].strip().startswith("-"):
            items.append(_scalar(lines[i].strip()[1:]))
            i += 1
            if i < len(lines) and _indent(lines[i]) > indent:
                _, i = _block(lines, i, _indent(lines[i]))
        return items, i
    out: dict[str, Any] = {}
    while i < len(lines) and _indent(lines[i]) >= indent:
        if _indent(lines[i]) > indent:  # a line deeper than its key expects: part of nothing we know
            i += 1
            continue
        key, sep, rest = lines[i].strip().partition(":")
        i += 1
        if not sep:
            continue
        rest = rest.strip()
        deeper = i < len(lines) and _indent(lines[i]) > indent
        if rest[:1] in ("|", ">"):
            body: list[str] = []
            cut = _indent(lines[i]) if deeper else 0
            while i < len(lines) and _indent(lines[i]) > indent:
                body.append(lines[i][cut:])
                i += 1
            out[key] = ("\n" if rest[0] == "|" else " ").join(body)
        elif not rest and deeper:
            out[key], i = _block(lines, i, _indent(lines[i]))
        else:
            out[key] = _scalar(rest)
    return out, i


def location(diagnostics: dict[str, Any]) -> tuple[str | None, int | None]:
    """Where a failed point's diagnostics say it failed: ``at``/``location`` as ``file:line[:col]``
    (tape's ``at: Test.<anonymous> (/abs/a.js:10:5)``, node's ``location``), as a mapping (node-tap's
    ``at: {fileName, lineNumber}``), or ``file`` and ``line`` keys."""
    for key in ("at", "location"):
        value = diagnostics.get(key)
        if isinstance(value, dict):
            file = value.get("fileName") or value.get("file") or value.get("filename")
            line = value.get("lineNumber") or value.get("line")
            if isinstance(file, str) and isinstance(line, str) and line.isdigit():
                return file.removeprefix("file://"), int(line)
        elif isinstance(value, str) and (found := _LOCATION.search(value.strip())):
            return found.group(1).removeprefix("file://"), int(found.group(2))
    file, line = diagnostics.get("file"), diagnostics.get("line")
    if isinstance(file, str) and isinstance(line, str) and line.isdigit():
        return file, int(line)
    return None, None
