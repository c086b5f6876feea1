"""An ACP ``session/prompt`` as cog's instruction: the person's text, then the context the editor
attached — embedded files with their contents, links to files the model may read itself — and the
images it attached (:func:`prompt_images`), which the model sees with the instruction.

Embedded contents come from the editor (the person chose them) and go to the model as they are; a
linked file is only named (relative to the workspace when it is in it), so the model reads it with
``read_file`` under the same secret-file rules as any other read.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from cogcli.contract.output import ImagePart
from workspace_tools.files.image import MAX_FILE_BYTES, BadImage, ImageTooLarge, human_bytes, prepare_image


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
        elif kind == "audio":
            attached.append("(an audio clip was attached; cog cannot pass it to the model)")
    instruction = "\n\n".join(t for t in texts if t.strip())
    if attached:
        instruction += "\n\nContext attached by the person:\n\n" + "\n\n".join(attached)
    return instruction


#: the base64 an image block may carry (the image cog reads at most, as base64)
_MAX_IMAGE_TEXT = MAX_FILE_BYTES * 4 // 3 + 4


def prompt_images(blocks: Sequence[Any]) -> list[ImagePart]:
    """The images of a prompt's ``image`` blocks, each checked and sized as ``read_file`` checks an
    image (its bytes, not its declared type; downscaled when large). A :class:`ValueError` names the
    block that is not a usable image and why."""
    images: list[ImagePart] = []
    for n, block in enumerate((b for b in blocks if getattr(b, "type", None) == "image"), start=1):
        name = f"image {n} of the prompt"
        text = getattr(block, "data", "") or ""
        if len(text) > _MAX_IMAGE_TEXT:
            raise ValueError(f"{name} is larger than cog reads for an image ({human_bytes(MAX_FILE_BYTES)}); send a smaller one")
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"{name} is not base64 data; send the image's bytes base64-encoded") from None
        try:
            images.append(prepare_image(data, getattr(block, "uri", None) or name).part)
        except (BadImage, ImageTooLarge) as exc:
            raise ValueError(f"{name} cannot be used: {exc}") from None
    return images
