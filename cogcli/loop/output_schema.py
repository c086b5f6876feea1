"""A run whose final answer must be JSON valid against a schema (``--output-schema FILE``).

The model is told the schema in its instructions (:meth:`OutputSchema.instructions`). When it
gives its final answer (a turn with no calls), :meth:`OutputSchema.check` parses it — the whole
answer, or one fenced ```json block that is the whole answer — and validates it with
``jsonschema``. An answer that is not valid goes back to the model as a user message naming the
problem (:meth:`OutputSchema.retry_message`), up to ``tries`` answers in all; the parsed value is
the ``finish`` event's ``output``. When no answer validates, the run ends with status ``error`` and
error code ``OUTPUT_SCHEMA_INVALID`` (exit 1).

The schema file is the person's, read once before the run: at most 256 KiB and
:data:`~cogcli.loop.json_bounds.MAX_SCHEMA_DEPTH` levels deep, a JSON object that is a valid JSON
Schema (its own ``$schema`` picks the draft; 2020-12 otherwise), every pattern one RE2 runs
(:mod:`cogcli.loop.schema_regex`: matched in time linear in the answer), no reference resolved over
the network. An answer longer than :data:`~cogcli.loop.json_bounds.MAX_ANSWER_CHARS` or nested
deeper than :data:`~cogcli.loop.json_bounds.MAX_ANSWER_DEPTH` is not valid (it goes back to the
model like any invalid answer) and is never parsed: nothing after it recurses that deep.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogcli.contract.errors import ConfigError, ErrorCode
from cogcli.loop.json_bounds import MAX_ANSWER_CHARS, MAX_ANSWER_DEPTH, MAX_SCHEMA_DEPTH, text_depth, value_depth

#: error code of a run whose final answer never matched its schema
OUTPUT_SCHEMA_INVALID = ErrorCode.OUTPUT_SCHEMA_INVALID
MAX_SCHEMA_BYTES = 256 * 1024
#: how many final answers a run may give before it ends failed (the first and two retries)
DEFAULT_TRIES = 3
#: an answer that is one fenced block and nothing else (models like to fence JSON)
_FENCED = re.compile(r"\A\s*```(?:json|JSON)?[ \t]*\n(?P<body>.*?)\n?```\s*\Z", re.S)
#: how much of the schema and of an error the model is shown
_SHOWN_SCHEMA = 16_000
_SHOWN_ERROR = 600


@dataclass(frozen=True)
class Verdict:
    """A final answer checked against the output schema."""
    ok: bool
    value: Any = None
    problem: str = ""


@dataclass(frozen=True)
class OutputSchema:
    """The JSON Schema a final answer must be valid against, and the tries left."""
    schema: dict[str, Any]
    source: str = "the output schema"
    tries: int = DEFAULT_TRIES
    _validator: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def load(cls, path: Path, *, tries: int = DEFAULT_TRIES) -> OutputSchema:
        """Read and check the schema file ``path``; a ConfigError names what is wrong with it."""
        try:
            with path.open("rb") as f:
                raw = f.read(MAX_SCHEMA_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"--output-schema: cannot read {path} ({exc.strerror or exc}): give a JSON Schema file") from None
        if len(raw) > MAX_SCHEMA_BYTES:
            raise ConfigError(f"--output-schema: {path} is larger than {MAX_SCHEMA_BYTES // 1024} KiB; a schema for one answer is smaller")
        try:
            text = raw.decode("utf-8")
            if text_depth(text, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH:
                raise ConfigError(_too_deep(str(path)))
            schema = json.loads(text)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"--output-schema: {path} is not JSON ({exc}): give a JSON Schema file") from None
        return cls.of(schema, source=str(path), tries=tries)

    @classmethod
    def of(cls, schema: Any, *, source: str = "the output schema", tries: int = DEFAULT_TRIES) -> OutputSchema:
        """A checked schema (a ConfigError when it is not a JSON Schema object)."""
        import jsonschema

        from cogcli.loop.schema_regex import check_patterns, linear_validator

        if not isinstance(schema, dict):
            raise ConfigError(f"--output-schema: {source} must hold a JSON object (a JSON Schema), not {type(schema).__name__}")
        if not 1 <= tries <= 20:
            raise ConfigError(f"the output schema's tries must be from 1 to 20, got {tries}")
        if value_depth(schema, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH:  # before anything recurses into it
            raise ConfigError(_too_deep(source))
        if (problem := check_patterns(schema)) is not None:  # before check_schema compiles them with Python's re
            raise ConfigError(f"--output-schema: {source} cannot be used: {problem}")
        kind = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        try:
            kind.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ConfigError(f"--output-schema: {source} is not a valid JSON Schema: {_short(exc.message)} (at {_where(exc.path)})") from None
        except RecursionError:
            raise ConfigError(_too_deep(source)) from None
        from referencing import Registry

        def no_remote(uri: str) -> Any:  # a $ref to another document is never fetched
            raise ConfigError(f"--output-schema: {source} refers to {uri!r}; only references inside the schema are followed")

        linear, format_checker = linear_validator(kind)  # pattern keywords on RE2, never backtracking
        validator = linear(schema, registry=Registry(retrieve=no_remote), format_checker=format_checker)
        try:  # a $ref loop that reads nothing of the answer ({"$ref": "#"}) would fail every answer
            validator.is_valid(None)
        except RecursionError:
            raise ConfigError(f"--output-schema: {source} follows $ref after $ref without end or too far (a loop such as "
                              '{"$ref": "#"}, or a chain thousands long); make each $ref lead to a schema that checks '
                              "something, in a few steps") from None
        except Exception:  # a reference it cannot follow: each answer is told so
            pass
        return cls(schema=schema, source=source, tries=tries, _validator=validator)

    def instructions(self) -> str:
        """What the model's instructions say about its final answer."""
        return (
            "## Final answer\n\nWhen the task is done, reply with only a JSON value valid against the JSON Schema below: "
            "no prose before or after it (a single ```json block is accepted). It is read by a program.\n\n"
            f"```json\n{self._schema_text()}\n```"
        )

    def check(self, answer: str) -> Verdict:
        """Whether ``answer`` is JSON valid against the schema: the parsed value, or the problem."""
        text = answer.strip()
        fenced = _FENCED.match(text)
        if fenced is not None:
            text = fenced.group("body").strip()
        if not text:
            return Verdict(False, problem="the answer was empty; it must be a JSON value")
        if len(text) > MAX_ANSWER_CHARS:
            return Verdict(False, problem=f"the answer is {len(text):,} characters long, more than the {MAX_ANSWER_CHARS:,} "
                                          "an answer may have; give a shorter JSON value")
        if text_depth(text, MAX_ANSWER_DEPTH) > MAX_ANSWER_DEPTH:  # json.loads would recurse once a level
            return Verdict(False, problem=f"the answer nests arrays and objects more than {MAX_ANSWER_DEPTH} levels deep, "
                                          "deeper than an answer may; give a flatter JSON value")
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            return Verdict(False, problem=f"the answer is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")
        try:
            error = _best_error(self._validator.iter_errors(value))
        except RecursionError:  # a schema whose references lead into themselves without consuming the answer
            return Verdict(False, problem="the schema could not be applied: its references nest too deeply")
        except Exception as exc:  # a $ref it cannot follow (never fetched)
            return Verdict(False, problem=f"the schema could not be applied ({type(exc).__name__}: {_short(str(exc))})")
        if error is not None:
            return Verdict(False, problem=f"{_short(error.message)} (at {_where(error.absolute_path)})")
        return Verdict(True, value=value)

    def retry_message(self, problem: str, tries_left: int) -> str:
        """The user message that sends an invalid answer back to the model."""
        return (
            f"Your final answer is not valid against the output schema: {problem}. Reply again with only a JSON value "
            f"valid against the schema ({tries_left} {'try' if tries_left == 1 else 'tries'} left); the schema:\n"
            f"```json\n{self._schema_text()}\n```"
        )

    def failure(self, problem: str) -> str:
        return f"the final answer did not match {self.source} after {self.tries} {'try' if self.tries == 1 else 'tries'}: {problem}"

    def _schema_text(self) -> str:
        text = json.dumps(self.schema, indent=1, ensure_ascii=False)
        return text if len(text) <= _SHOWN_SCHEMA else json.dumps(self.schema, separators=(",", ":"), ensure_ascii=False)[:_SHOWN_SCHEMA]


def _too_deep(source: str) -> str:
    return (f"--output-schema: {source} nests arrays and objects more than {MAX_SCHEMA_DEPTH} levels deep, the most a "
            "schema may; flatten it (define repeated parts once under $defs and point to them with $ref)")


def _best_error(errors: Any) -> Any:
    import jsonschema

    return jsonschema.exceptions.best_match(errors)


def _where(path: Any) -> str:
    """A JSON Pointer-ish place: ``$`` for the whole value, ``$.items[2].name`` below it."""
    parts = ["$"]
    for p in path:
        parts.append(f"[{p}]" if isinstance(p, int) else f".{p}")
    return "".join(parts)


def _short(text: str) -> str:
    """``text`` cut in its middle to what the model is shown: the end of a message (``… is not a
    'regex'``) says what is wrong when the value quoted before it is long."""
    if len(text) <= _SHOWN_ERROR:
        return text
    half = (_SHOWN_ERROR - 1) // 2
    return text[:half] + "…" + text[-half:]
