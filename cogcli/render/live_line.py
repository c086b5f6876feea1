"""A running test run's live line: ``Run tests  all · 248/2459 · 1 failed · 247 passed  ████░░░░``,
cut to the terminal by columns; every live line ends with the background commands running
(:func:`background_tail`: `` · 1 in background``, counted from the events by
:attr:`cogcli.render.summary.RunSummary.jobs_running`, so ``cog render`` of a saved stream says the same)."""

from __future__ import annotations

from cogcli.shown.approval import columns
from cogcli.render.details import TestProgress
from cogcli.shown.visible import visible

#: cells of the bar a test run's live line draws on a terminal
BAR_CELLS = 16


def cut_to(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` columns (ending in ``…`` when cut)."""
    if columns(text) <= width:
        return text
    out, used = "", 0
    for c in text:
        w = columns(c)
        if used + w > width - 1:
            break
        out, used = out + c, used + w
    return out + "…"


def progress_bar(done: int, total: int, cells: int = BAR_CELLS) -> str:
    """``██████░░░░░░``: ``done`` of ``total`` in ``cells`` cells."""
    filled = min(cells, done * cells // total) if total > 0 else 0
    return "█" * filled + "░" * (cells - filled)


def running_tests_line(head: str, progress: TestProgress, width: int | None = None, *, bar: bool = True, last: str | None = None) -> str:
    """A running test run in one line: ``head · 248/2459 · 1 failed · 247 passed``, then (``bar``)
    its bar and the test that just finished (``last``, else the progress's ``current``), as far as
    they fit in ``width`` columns; the line is cut to ``width`` as a last resort. ``head`` is the
    row's words (``Run tests  all``), already :func:`visible`; ``last`` is made visible here."""
    p = progress
    words = [head, f"{p.done:,}/{p.collected:,}" if p.collected else f"{p.done:,} run"]
    if p.failed:
        words.append(f"{p.failed:,} failed")
    if p.errors:
        words.append(f"{p.errors:,} {'error' if p.errors == 1 else 'errors'}")
    words.append(f"{p.passed:,} passed")
    line = " · ".join(words)
    tails = []
    if bar and p.collected:
        tails.append("  " + progress_bar(p.done, p.collected))
    if last or p.current:
        tails.append(" · " + visible(last or p.current or ""))
    if width is None:
        return line + "".join(tails)
    for n in range(len(tails), -1, -1):  # the test's id goes first, then the bar
        candidate = line + "".join(tails[:n])
        if columns(candidate) <= width:
            return candidate
    return cut_to(line, width)


def background_tail(running: int) -> str:
    """What the live line ends with while background commands run: `` · 2 in background`` (nothing when none does)."""
    return f" · {running} in background" if running > 0 else ""
