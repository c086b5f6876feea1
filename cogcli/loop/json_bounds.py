"""How deep and how big a JSON document cog reads for ``--output-schema``: checked without recursion.

Python's ``json`` parser, ``jsonschema`` and every writer after them (events, the thread store)
recurse once per level of nesting, so a document nested thousands deep raises ``RecursionError``
wherever it goes first. Its depth is measured here before anything parses it — one pass over the
text, or an explicit stack over a value already parsed — so that nothing deeper than the limit is
ever handed to them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: the deepest nesting of ``[``/``{`` a final answer may have (the whole answer is depth 1)
MAX_ANSWER_DEPTH = 64
#: the longest final answer read as JSON, in characters
MAX_ANSWER_CHARS = 1024 * 1024
#: the deepest nesting a schema may have (an object schema ten properties deep is about 21)
MAX_SCHEMA_DEPTH = 64

#: what changes the nesting, or hides a bracket inside a string
_STRUCTURE = re.compile(r'[\[\]{}"\\]')


def text_depth(text: str, stop_after: int) -> int:
    """The deepest nesting of arrays and objects in the JSON text ``text`` (0 for a scalar), brackets
    inside strings not counted; it stops counting once past ``stop_after``. Linear, no recursion;
    text that is not JSON gets some number and is refused by the parser later."""
    depth = deepest = 0
    in_string = False
    escaped_at = -1  # the place of the character after a backslash in a string
    for found in _STRUCTURE.finditer(text):
        at, c = found.start(), found.group()
        if at == escaped_at:
            continue
        if in_string:
            if c == "\\":
                escaped_at = at + 1
            elif c == '"':
                in_string = False
            continue
        if c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop_after:
                    return deepest
        elif c in "]}":
            depth -= 1
    return deepest


def value_depth(value: Any, stop_after: int) -> int:
    """The deepest nesting of lists/dicts in ``value`` (0 for a scalar), walked with an explicit
    stack; it stops once past ``stop_after`` (so a value that contains itself ends too)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest > stop_after:
                return deepest
        stack.extend((child, depth) for child in children)
    return deepest
