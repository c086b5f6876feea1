"""What the terminal draws under a file change's row of its diagnostics (``details.diagnostics``):
the new problems the change introduced (``1 new error`` and ``file:line: rule: message``), and,
once a run per checker, a checker that could not run here (``tsc not run: could not check …``),
which the model is told once a session too (``workspace_tools/diagnostics/after_change.py``).
"""

from __future__ import annotations

from typing import Any

from cogcli.contract.details_readers import read_diagnostics

#: new problems drawn under a file change's row (the rest counted)
DIAGNOSTICS_SHOWN = 10


class DiagnosticsLines:
    """The lines under each file change's row, remembering which checkers were said not to run."""

    def __init__(self) -> None:
        self._said: set[str] = set()

    def lines(self, details: Any, *, failed: bool = False) -> list[tuple[str, str | None]]:
        """``(text, style)`` pairs, style one of ``red`` / ``green`` / ``dim`` or None."""
        found = read_diagnostics(details)
        if found is None or failed:
            return []
        out: list[tuple[str, str | None]] = []
        if found.new or found.fixed:
            out.append((found.headline(), "red" if found.new else "green"))
            out += [("  " + line, None) for line in found.lines(DIAGNOSTICS_SHOWN)]
        if found.of_change:  # a change's (the diagnostics tool says its own in its content)
            for name, why in found.unable():
                if name not in self._said:
                    self._said.add(name)
                    out.append((f"{name} not run: {why}", "dim"))
        return out
