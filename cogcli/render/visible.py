"""The renderers' name for :func:`cogcli.shown.visible`, the one function that escapes control
characters in anything shown to a person, and for :func:`cogcli.shown.showing_live_line`, how a
renderer says it keeps a line in place on the terminal."""

from __future__ import annotations

from cogcli.shown import showing_live_line, visible

__all__ = ["showing_live_line", "visible"]
