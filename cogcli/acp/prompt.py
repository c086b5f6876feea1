"""An ACP ``session/prompt`` as cog's instruction: the person's text, then the context the editor
attached — embedded files with their contents, links to files the model may read itself.

Embedded contents come from the editor (the person chose them) and go to the model as they are; a
linked file is only named (relative to the workspace when it is in it), so the model reads it with
``read_file`` under the same secret-file rules as any other read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse


def uri_path(uri: str, root: Path) -> str:
    """How the model is shown a resource's URI: a ``file://`` URI in the workspace as its path
    relative to the root, any other as it is."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return uri
    path = Path(unquote(parsed.path))
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def fenced(text: str) -> str:
    """``text`` in a code fence longer than any run of backticks in it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}{'' if text.endswith(chr(10)) else chr(10)}{fence}"


def instruction_of(blocks: Sequence[Any], root: Path) -> str:
    """The instruction a prompt's content blocks make: text blocks in order, then each attachment
    (``resource``: the file's contents; ``resource_link``: its path, to read) under one heading."""
    texts: list[str] = []
    attached: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "resource":
            resource = block.resource
            shown = uri_path(resource.uri, root)
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                attached.append(f"{shown}:\n{fenced(text)}")
            else:
                attached.append(f"{shown}: (binary contents, not included)")
        elif kind == "resource_link":
            attached.append(f"{uri_path(block.uri, root)} (referenced; read it if you need it)")
        elif kind in ("image", "audio"):
            attached.append(f"(an {kind} was attached; cog cannot pass it to the model)")
    instruction = "\n\n".join(t for t in texts if t.strip())
    if attached:
        instruction += "\n\nContext attached by the person:\n\n" + "\n\n".join(attached)
    return instruction
