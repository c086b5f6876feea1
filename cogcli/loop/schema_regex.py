"""The regular expressions of an output schema, matched on RE2: time linear in the answer.

``jsonschema`` matches ``pattern``, ``patternProperties`` (and the property names
``additionalProperties`` leaves out) with Python's ``re``, which backtracks: ``^(\\w+\\s?)*$`` on
35 characters that end in ``!`` runs for many minutes, and no timeout can stop it (the match holds
its thread). So a checked schema's validator class has those keywords on RE2 (the ``google-re2``
wheel), which never backtracks.

Every pattern is compiled when the schema is checked, before anything runs: one RE2 cannot run
(lookaround, backreferences — the constructs whose matching may take exponential time) is refused
then, naming the pattern and how to write it instead, rather than matched later under a time limit
(a Python match cannot be stopped, only abandoned in a thread that keeps burning a core). JSON
Schema's patterns are ECMA-262's; RE2 reads them alike, with ``\\d``, ``\\w`` and ``\\b`` ASCII
and ``$`` the end of the text as there; ``\\uXXXX`` is spelled ``\\x{XXXX}`` for RE2 and Python's
``\\Z`` is RE2's ``\\z``.

``format: "regex"`` (an answer's string that must be a regular expression) keeps Python's
``re.compile`` — compiling does not backtrack — after bounding what it reads: its recursive parser
would overflow the stack on parentheses nested thousands deep.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

#: schema keywords whose value is one schema / a list of schemas / a map of name → schema
_ONE = ("not", "if", "then", "else", "items", "additionalItems", "additionalProperties", "unevaluatedItems",
        "unevaluatedProperties", "contains", "propertyNames", "contentSchema", "extends")
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems", "items", "extends", "type", "disallow")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
#: what RE2 lacks, as people write it, and how it is named in the refusal
_UNSUPPORTED = (
    (re.compile(r"\(\?<?[=!]"), "lookahead or lookbehind ((?=…), (?!…), (?<=…), (?<!…))"),
    (re.compile(r"\\[1-9]|\\k<|\(\?P=\w+\)"), "a backreference (\\1, \\k<name>)"),
    (re.compile(r"\(\?>|[*+?}]\+"), "an atomic group or possessive quantifier ((?>…), a++)"),
)
#: the longest string ``format: "regex"`` compiles, and the deepest nesting of its parentheses
_FORMAT_REGEX_CHARS = 10_000
_FORMAT_REGEX_DEPTH = 100


class PatternRefused(ValueError):
    """A schema pattern RE2 cannot run: its message names the pattern and the fix."""


@functools.lru_cache(maxsize=512)
def compiled(pattern: str) -> Any:
    """``pattern`` (ECMA-262, as JSON Schema writes it) compiled for RE2; PatternRefused says why not."""
    import re2

    if _paren_depth(pattern) > _FORMAT_REGEX_DEPTH:
        raise PatternRefused(f"the pattern {_shown(pattern)} nests parentheses more than {_FORMAT_REGEX_DEPTH} deep; "
                             "write it flatter")
    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern on stderr
    options.never_capture = True  # only whether it matches is asked
    try:
        return re2.compile(_for_re2(pattern), options)
    except re2.error as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        what = next((name for rule, name in _UNSUPPORTED if rule.search(pattern)), None)
        if what is not None:
            fix = (f"it uses {what}, which can take exponential time to match; cog matches patterns in linear time "
                   "(RE2) and cannot run it. Write it without that construct (a plainer pattern, or keywords such as "
                   "enum, minLength/maxLength or not)")
        else:
            fix = f"RE2, the linear-time engine cog matches patterns with, cannot read it ({detail}); simplify it"
        raise PatternRefused(f"the pattern {_shown(pattern)}: {fix}") from None


def _shown(pattern: str) -> str:
    return repr(pattern) if len(pattern) <= 200 else repr(pattern[:200]) + "…"


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text`` (JSON Schema's rule: not anchored)."""
    return compiled(pattern).search(text) is not None


def _for_re2(pattern: str) -> str:
    r"""ECMA-262 / Python spellings RE2 reads otherwise: ``\uXXXX`` → ``\x{XXXX}``, ``\Z`` → ``\z``."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9A-Fa-f]{4}", pattern[i + 2 : i + 6]):
                out.append("\\x{" + pattern[i + 2 : i + 6] + "}")
                i += 6
                continue
            out.append("\\z" if nxt == "Z" else c + nxt)
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def schema_patterns(schema: Any) -> Iterator[tuple[str, str]]:
    """(keyword, pattern) for every ``pattern`` and ``patternProperties`` name in the schema's
    subschemas (not inside ``const``, ``enum``, ``default`` or ``examples``, which are data). An
    explicit stack, no recursion; the schema's depth is bounded before."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        if isinstance(node.get("pattern"), str):
            yield "pattern", node["pattern"]
        for key, value in node.items():
            if key in _MAP and isinstance(value, dict):
                if key == "patternProperties":
                    yield from (("patternProperties", name) for name in value)
                stack.extend(value.values())
            elif key in _MANY and isinstance(value, list):
                stack.extend(value)
            elif key in _ONE:
                stack.append(value)


def check_patterns(schema: Any) -> str | None:
    """The problem with the schema's patterns (one RE2 cannot run; ``unevaluatedProperties`` with
    ``patternProperties``, which ``jsonschema`` would match with Python's ``re``), or None."""
    uses_pattern_properties = False
    for keyword, pattern in schema_patterns(schema):
        uses_pattern_properties = uses_pattern_properties or keyword == "patternProperties"
        try:
            compiled(pattern)
        except PatternRefused as exc:
            return f"{exc} (in {keyword})"
    if uses_pattern_properties and _uses(schema, "unevaluatedProperties"):
        return ("it uses unevaluatedProperties together with patternProperties, which cog cannot check in linear "
                "time; use additionalProperties instead of unevaluatedProperties")
    return None


def _uses(schema: Any, keyword: str) -> bool:
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if keyword in node:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


# --- the keywords on RE2 (jsonschema's signature: validator, the keyword's value, instance, schema) ---


def pattern_keyword(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def pattern_properties_keyword(validator: Any, patterns: dict[str, Any], instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if search(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def additional_properties_keyword(validator: Any, additional: Any, instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    named = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [k for k in instance if k not in named and not any(search(p, k) for p in patterns)]
    if validator.is_type(additional, "object"):
        for name in extras:
            yield from validator.descend(instance[name], additional, path=name)
    elif additional is False and extras:
        shown = ", ".join(repr(k) for k in sorted(extras))
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(f"{shown} {verb} not match any of the regexes: {', '.join(repr(p) for p in sorted(patterns))}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({shown} {verb} unexpected)")


def is_bounded_regex(instance: object) -> bool:
    """``format: "regex"``: a string Python's ``re`` compiles, read only when it is short and its
    parentheses shallow (a compile error is False too)."""
    if not isinstance(instance, str):
        return True
    if len(instance) > _FORMAT_REGEX_CHARS or _paren_depth(instance) > _FORMAT_REGEX_DEPTH:
        return False
    try:
        re.compile(instance)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


def _paren_depth(text: str) -> int:
    depth = deepest = 0
    for c in text:  # an escaped parenthesis counted too: a bound, not a parse
        if c == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif c == ")":
            depth = max(depth - 1, 0)
    return deepest


def linear_validator(kind: Any) -> Any:
    """The ``jsonschema`` validator class ``kind`` with its pattern keywords on RE2, and a format
    checker whose ``regex`` is bounded."""
    import jsonschema

    ours = {"pattern": pattern_keyword, "patternProperties": pattern_properties_keyword,
            "additionalProperties": additional_properties_keyword}
    extended = jsonschema.validators.extend(kind, {k: v for k, v in ours.items() if k in kind.VALIDATORS})
    checker = jsonschema.FormatChecker(formats=())
    checker.checkers = dict(kind.FORMAT_CHECKER.checkers)
    checker.checkers["regex"] = (is_bounded_regex, ())
    return extended, checker
