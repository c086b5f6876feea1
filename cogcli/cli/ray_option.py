"""``--ray [ADDRESS]`` (``cog batch``, ``cog edit --attempts``): an option whose value may be left
out. Only the standard library here (``cog --help`` imports this)."""

from __future__ import annotations

import re


def ray_address(args: list[str]) -> list[str]:
    """``--ray`` takes an optional ADDRESS: the next word is it when it looks like one (``auto``,
    ``local``, ``ray://…``, ``host:port``); else ``--ray`` alone means a local Ray (``--ray=local``)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            out += args[i:]
            break
        if word == "--ray":
            following = args[i + 1] if i + 1 < len(args) else None
            if following is not None and (following in ("auto", "local") or "://" in following
                                          or re.fullmatch(r"[\w.-]+:\d+", following)):
                out.append(f"--ray={following}")
                i += 2
                continue
            out.append("--ray=local")
        else:
            out.append(word)
        i += 1
    return out
