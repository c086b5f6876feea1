"""The renderers' name for :func:`cogcli.shown.visible`, the one function that escapes control
characters in anything shown to a person."""

from __future__ import annotations

from cogcli.shown import visible

__all__ = ["visible"]
