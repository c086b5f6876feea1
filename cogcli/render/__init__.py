"""Renderers: consumers of wire events. Each has ``handle(event)``, ``close()`` and a ``summary``
(:class:`~cogcli.render.summary.RunSummary`) that says how the run went.

- ``text`` — rows, live progress, diffs and failing tests (:mod:`cogcli.render.text`)
- ``jsonl`` — one JSON event per line (:mod:`cogcli.render.jsonl`)
- ``github`` — GitHub Actions groups, annotations and job summary (:mod:`cogcli.render.github`)
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from cogcli.wire.events import BaseEvent
    from cogcli.render.summary import RunSummary

FORMATS = ("text", "jsonl", "github")


class Renderer(Protocol):
    summary: RunSummary

    def handle(self, event: BaseEvent) -> None: ...

    def close(self) -> None: ...


def make_renderer(fmt: str, out: Any = None, *, show_content: bool = False) -> Renderer:
    """The renderer for ``fmt`` writing to ``out`` (default: stdout). ``show_content``: the text
    renderer also prints what the model reads of a result with no diff or test report."""
    out = out or sys.stdout
    if fmt == "jsonl":
        from cogcli.render.jsonl import JsonlWriter

        return JsonlWriter(getattr(out, "buffer", out))
    if fmt == "github":
        from cogcli.render.github import GithubRenderer

        return GithubRenderer(out, step_summary=os.environ.get("GITHUB_STEP_SUMMARY") or None)
    if fmt == "text":
        from cogcli.render.text import TextRenderer

        return TextRenderer(out, show_content=show_content)
    raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
