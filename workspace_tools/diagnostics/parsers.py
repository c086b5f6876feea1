"""Each checker's output read into :class:`~cogcli.contract.details.Diagnostic` records.

Every reader takes the output text and a function that makes a path the checker wrote (absolute or
relative to the folder it ran in) relative to the workspace, or None for a file outside it (those
are left out). Machine-readable formats where the checker has one (ruff's, mypy's and ESLint's
JSON, cargo's JSON lines), the one-line text format where it does not (tsc, go vet, gopls).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # made when a checker's output is read: listing the tools imports no details model
    from cogcli.contract.details import Diagnostic

Rel = Callable[[str], "str | None"]
Reader = Callable[[str, Rel, str], "list[Diagnostic]"]


def _json_values(text: str) -> Iterator[Any]:
    """The JSON values in ``text``: one document, or one per line."""
    text = text.strip()
    if not text:
        return
    try:
        yield json.loads(text)
        return
    except ValueError:
        pass
    start = min((i for i in (text.find("\n["), text.find("\n{")) if i >= 0), default=-1)
    if start >= 0:  # a document after a warning line on stderr
        try:
            yield json.loads(text[start:])
            return
        except ValueError:
            pass
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("{", "[")):
            try:
                yield json.loads(line)
            except ValueError:
                continue


def _make(rel: Rel, source: str, file: Any, line: Any, column: Any, rule: Any, message: Any, severity: str = "error") -> Diagnostic | None:
    from cogcli.contract.details import Diagnostic

    if not isinstance(file, str) or not isinstance(message, str):
        return None
    shown = rel(file)
    if shown is None:
        return None
    return Diagnostic(file=shown, line=int(line) if isinstance(line, int) and line > 0 else 1,
                      column=column if isinstance(column, int) else None, rule=str(rule or source),
                      message=" ".join(message.split())[:500], severity=severity, source=source)


def ruff_json(text: str, rel: Rel, source: str) -> list[Diagnostic]:
    out = []
    for doc in _json_values(text):
        for item in doc if isinstance(doc, list) else []:
            if not isinstance(item, dict):
                continue
            where = item.get("location") or {}
            # a syntax error has no code: it is what the edit broke first
            d = _make(rel, source, item.get("filename"), where.get("row"), where.get("column"),
                      item.get("code") or "syntax-error", item.get("message"))
            if d:
                out.append(d)
    return out


def mypy_json(text: str, rel: Rel, source: str) -> list[Diagnostic]:
    out = []
    for doc in _json_values(text):
        if isinstance(doc, dict):
            severity = str(doc.get("severity") or "error")
            d = _make(rel, source, doc.get("file"), doc.get("line"), doc.get("column"), doc.get("code") or severity,
                      doc.get("message"), "note" if severity == "note" else severity)
            if d and d.severity != "note":
                out.append(d)
    return out


def pyright_json(text: str, rel: Rel, source: str) -> list[Diagnostic]:
    out = []
    for doc in _json_values(text):
        for item in doc.get("generalDiagnostics", []) if isinstance(doc, dict) else []:
            start = (item.get("range") or {}).get("start") or {}
            line = start.get("line")
            severity = str(item.get("severity") or "error")
            if severity == "information":
                continue
            d = _make(rel, source, item.get("file"), line + 1 if isinstance(line, int) else None,
                      (start.get("character") or 0) + 1, item.get("rule") or source, item.get("message"), severity)
            if d:
                out.append(d)
    return out


def eslint_json(text: str, rel: Rel, source: str) -> list[Diagnostic]:
    out = []
    for doc in _json_values(text):
        for result in doc if isinstance(doc, list) else []:
            for item in result.get("messages", []) if isinstance(result, dict) else []:
                severity = "error" if item.get("severity") == 2 else "warning"
                d = _make(rel, source, result.get("filePath"), item.get("line"), item.get("column"),
                          item.get("ruleId") or ("syntax-error" if item.get("fatal") else source), item.get("message"), severity)
                if d:
                    out.append(d)
    return out


def cargo_json(text: str, rel: Rel, source: str) -> list[Diagnostic]:
    out = []
    for doc in _json_values(text):
        if not isinstance(doc, dict) or doc.get("reason") != "compiler-message":
            continue
        message = doc.get("message") or {}
        level = str(message.get("level") or "")
        if level not in ("error", "warning"):
            continue
        spans = [s for s in message.get("spans") or [] if isinstance(s, dict)]
        span = next((s for s in spans if s.get("is_primary")), spans[0] if spans else None)
        if span is None:
            continue
        code = (message.get("code") or {}).get("code") if isinstance(message.get("code"), dict) else None
        d = _make(rel, source, span.get("file_name"), span.get("line_start"), span.get("column_start"), code or level,
                  message.get("message"), level)
        if d:
            out.append(d)
    return out


_TSC = re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+),(?P<col>\d+)\): (?P<sev>error|warning) (?P<code>TS\d+): (?P<msg>.*)$")


def tsc_text(text: str, rel: Rel, source: str) -> list[Diagnostic]:
    out = []
    for line in text.splitlines():
        m = _TSC.match(line.strip())
        if m:
            d = _make(rel, source, m["file"], int(m["line"]), int(m["col"]), m["code"], m["msg"], m["sev"])
            if d:
                out.append(d)
    return out


#: ``./a.go:6:2: message`` (go vet, also after ``vet: ``), ``a.go:6:2-9: message`` (gopls check)
_GO = re.compile(r"^(?:vet: )?(?P<file>[^\s:]+\.go):(?P<line>\d+):(?P<col>\d+)(?:-\d+)?: (?P<msg>.*)$")


def go_text(text: str, rel: Rel, source: str) -> list[Diagnostic]:
    out = []
    for line in text.splitlines():
        m = _GO.match(line.strip())
        if m:
            # ``vet: …`` is the package failing to build (a syntax or type error), not an analyzer's finding
            rule = "compile" if line.strip().startswith("vet: ") else source
            d = _make(rel, source, m["file"], int(m["line"]), int(m["col"]), rule, m["msg"])
            if d:
                out.append(d)
    return out


def tsserver_items(found: dict[str, list[Any]], rel: Rel, source: str) -> list[Diagnostic]:
    """tsserver's answers (per file: ``{start: {line, offset}, text, code, category}``) as tsc's plain
    output says them: ``TS2322``, the first line of the message, errors and warnings only."""
    out = []
    for file, items in found.items():
        for item in items:
            if not isinstance(item, dict) or item.get("category") not in ("error", "warning"):
                continue
            start = item.get("start") or {}
            text = item.get("text")
            d = _make(rel, source, file, start.get("line"), start.get("offset"), f"TS{item.get('code')}",
                      text.split("\n", 1)[0] if isinstance(text, str) else None, item["category"])
            if d:
                out.append(d)
    return out
