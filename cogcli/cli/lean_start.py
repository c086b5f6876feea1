"""What the ``cog`` console script changes in its libraries to start sooner (issue 53).

**No pydantic plugins looked up.** pydantic asks ``importlib.metadata`` for the ``pydantic``
entry points of every installed distribution when it makes its first validator (importing
``importlib.metadata``, ``zipfile``, ``csv``… and reading each distribution's metadata: about 47M
instructions of ``cog edit``'s 2.1G before its first request, 100M of a bare first model). cog's own
models use no plugin, so the console script tells pydantic there are none
(:func:`no_pydantic_plugins`) — unless the person set ``PYDANTIC_DISABLE_PLUGINS`` (to anything,
even empty: ``PYDANTIC_DISABLE_PLUGINS= cog …`` loads every plugin, pydantic's own rule). The
environment is not changed: the programs cog starts see the person's. Only the command line does
this; ``import cogcli`` in another program changes nothing.

**typer's coercion, made when a value needs it** (:func:`lazy_coercion`). typer (0.2x) turns each
parameter's value into its type with a pydantic ``TypeAdapter`` it builds for that parameter when
the command line is parsed, given or not: ``cog tools`` imported typer's pydantic adapters (and
pydantic's constrained types) to hand back ``None`` for a ``-C`` not given. Here a parameter's
coercion is built the first time a value needs it; typer's own ``RuntimeParam.coerce`` still
decides what a missing value is (``None``, or ``()`` for a list), and a plain ``str`` given to a
``str`` parameter (no parser, not a file) is what typer's adapter returns for it, itself
(``str(value)``, then pydantic's lax ``str``), as is a member of an ``Enum`` parameter's own choices
(a default: typer's choice check returns a member as it is). Everything else — numbers and their
ranges, choices by name, paths, lists, bad values and their messages — goes through typer's
adapter, built as before (``tests/test_lean_start.py`` compares the two on every parameter of every
cog command). Installed by :mod:`cogcli.cli.typer_app` when typer has this shape; another typer is
left as it is. ``cog tools``: 847M → 824M instructions.

**``cog edit`` without typer** (:func:`quick_main`). Importing typer and building the command from
its declarations was about a twentieth of ``cog edit``'s instructions to its first request. The
parameters of ``cog edit`` as typer makes them are kept beside this module (``command_lines.json``,
written by :func:`write_spec`, valid while the files it was made from are unchanged); a command line
whose every word they explain is parsed here and handed to the same body typer's command calls
(:func:`cogcli.commands.edit.edit_command`); any other (help, a mistake, an unknown word) goes to
typer as before, which says what is wrong.

**The process around a command** (:func:`command_line`, :func:`resume_gc`, :func:`setup_logging`):
shared by typer's commands and the quick path."""

from __future__ import annotations

import contextlib
import gc
import logging
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["command_line", "lazy_coercion", "no_pydantic_plugins", "resume_gc", "setup_logging"]

log = logging.getLogger("cogcli")


#: what stands for pydantic's plugin loader when the console script looks none up
_PLUGIN_LOADER = "pydantic.plugin._loader"


def no_pydantic_plugins() -> bool:
    """Tell pydantic (before it makes a validator) that no plugin is installed, unless the person
    set ``PYDANTIC_DISABLE_PLUGINS``; True when it did. pydantic's loader is a module it imports on
    its first validator: a stand-in answering ``get_plugins() -> ()`` takes its place."""
    import os
    import sys
    import types

    if "PYDANTIC_DISABLE_PLUGINS" in os.environ or _PLUGIN_LOADER in sys.modules:
        return False
    loader = types.ModuleType(_PLUGIN_LOADER, "pydantic's plugin loader for cog's command line: no plugins (cogcli.cli.lean_start)")
    loader.PYDANTIC_ENTRY_POINT_GROUP = "pydantic"  # type: ignore[attr-defined]
    loader._plugins = {}  # type: ignore[attr-defined]
    loader._loading_plugins = False  # type: ignore[attr-defined]
    loader.get_plugins = lambda: ()  # type: ignore[attr-defined]
    sys.modules[_PLUGIN_LOADER] = loader
    return True


def lazy_coercion() -> bool:
    """Make typer's parameters build their coercion on first need; False when this typer's
    parameters are not the shape this knows (nothing changed then). See the module's doc."""
    import dataclasses
    import enum

    try:
        from typer import _coercion
        from typer.core import _TyperParameter
    except ImportError:
        return False
    runtime_param = getattr(_coercion, "RuntimeParam", None)
    build = getattr(_coercion, "build_runtime_param", None)
    original = getattr(_TyperParameter, "get_runtime_param", None)
    if runtime_param is None or build is None or original is None or getattr(original, "_cog_lazy", False):
        return False

    @dataclasses.dataclass(frozen=True)
    class Deferred(runtime_param):  # type: ignore[valid-type, misc]
        """Stands for a parameter's coercion until a value needs it (then typer's own is built)."""

        descriptor: Any = None

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            descriptor = self.descriptor
            annotation = descriptor.annotation
            if descriptor.file_annotation is None and descriptor.parameter_info.parser is None:
                if type(value) is str and annotation is str:
                    return value  # typer's adapter: str(value), then pydantic's lax str — the value itself
                if isinstance(annotation, type) and issubclass(annotation, enum.Enum) and isinstance(value, annotation):
                    return value  # a member of the choices (a default): typer's choice check returns it as it is
            real = build(descriptor)
            param._runtime_param = real
            return real._coerce_value(value, param=param, ctx=ctx)

    def get_runtime_param(self: Any) -> Any:
        made = self._runtime_param
        if made is None:
            descriptor = self.type_descriptor
            made = Deferred(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation, descriptor=descriptor)
        return made

    get_runtime_param._cog_lazy = True  # type: ignore[attr-defined]
    _TyperParameter.get_runtime_param = get_runtime_param
    return True


# --- the process around a command (typer's or the quick path's: cogcli.cli.quick_edit) ------------

_gc_paused = False


@contextlib.contextmanager
def command_line() -> Iterator[None]:
    """Around one ``cog`` command: stdout that cannot fail on an unencodable character, the cyclic
    collector off for start-up (start-up allocates much and frees little: its passes over it are
    wasted time; :func:`resume_gc` turns it back on), and at the end a reader that went away said
    nothing more about, and what is alive frozen (the interpreter's last collections would walk
    everything typer, pydantic and the tools built: tens of ms; files are closed, atexit handlers
    and weakref finalizers still run)."""
    global _gc_paused
    try:
        sys.stdout.reconfigure(errors="replace")  # type: ignore[union-attr]
    except (AttributeError, ValueError):
        pass
    if gc.isenabled():
        gc.disable()
        _gc_paused = True
    try:
        yield
    finally:
        _quiet_broken_stdout()
        gc.freeze()


def resume_gc() -> None:
    """Turn the collector back on if :func:`command_line` turned it off for start-up. What start-up
    built (modules, classes, functions: alive until the process ends) is frozen first: the
    allocation that follows would otherwise start a full collection walking all of it (about 10 ms
    just before ``cog edit``'s first request), and so would every later full collection."""
    global _gc_paused
    if _gc_paused:
        _gc_paused = False
        gc.freeze()
        gc.enable()


def _quiet_broken_stdout() -> None:
    """When stdout's reader went away (``cog … | head``), say nothing more about it at exit."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


class _VisibleFormatter(logging.Formatter):
    """``cog: message``, every control character escaped (log lines carry names and paths from
    the workspace, the model and MCP servers)."""

    def format(self, record: logging.LogRecord) -> str:
        from cogcli.shown.visible import visible

        return visible(super().format(record))


class _TerminalHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """stderr, each message on a line of its own: a line the renderer keeps in place on the
    terminal (a running test's count) is erased first (Ctrl-C's notice never lands at its end)."""

    def emit(self, record: logging.LogRecord) -> None:
        from cogcli.shown.visible import clear_live_line

        clear_live_line()
        super().emit(record)


def setup_logging(verbose: bool) -> None:
    """``cog -v``: what happens, logged to stderr; otherwise warnings only."""
    handler = _TerminalHandler(sys.stderr)
    handler.setFormatter(_VisibleFormatter("cog: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.DEBUG if verbose else logging.WARNING)
    log.propagate = False


# --- `cog edit`, `cog chat`, `cog tool`, `cog tools` without typer ---------------------------------

#: the command lines the quick path knows, as typer makes them from cog's declarations
#: (:func:`write_spec`); kept beside this module, valid while its sources are unchanged (:func:`spec_key`)
SPEC_FILE = "command_lines.json"
#: the files (under cogcli/) the spec is made from
SPEC_SOURCES = ("cli/edit.py", "cli/chat.py", "cli/tool.py", "cli/typer_app.py", "cli/setting_flags.py", "cli/ray_option.py",
                "settings/options.py")
#: the commands the quick path runs: name -> (module, function: the body typer's command calls too, when
#: the collector comes back on: "started" the body says when, "now" before it, "never" a listing)
QUICK = {
    "edit": ("cogcli.commands.edit", "edit_command", "started"),
    "chat": ("cogcli.commands.chat", "chat_command", "now"),
    "tool": ("cogcli.commands.tool", "tool_command", "started"),
    "tools": ("cogcli.commands.tool", "tools_command", "never"),
}
#: ``cog``'s own options the quick path takes before the command's name
_VERBOSE = ("-v", "--verbose")
#: words that always go to typer (it prints the help, the version)
_TYPER_ONLY = ("-h", "--help", "--version")


def spec_key() -> str:
    """A checksum of the spec's sources: a spec made from other sources is not used (a change
    to them is caught, not an attack: whoever can write cog's sources runs what they like)."""
    import zlib
    from pathlib import Path

    digest = 0
    package = Path(__file__).resolve().parents[1]
    for name in SPEC_SOURCES:
        digest = zlib.crc32(name.encode() + b"\0" + (package / name).read_bytes() + b"\0", digest)
    return f"crc32:{digest:08x}"


def quick_main(argv: list[str]) -> int | None:
    """``cog [-v] edit|chat|tool|tools …`` run without importing typer (typer and its building of
    the command were 4% of the instructions to ``cog edit``'s first request, more of a one-off
    command's; issue 53) when the spec is current and every word is one the spec knows: an option
    of the command with its value (the next word, or joined by ``=``), a flag or its negation, a
    value of its type within its bounds, the arguments, ``--``. Anything else returns None, and
    typer parses the command line (and says what is wrong with it, or prints the help). The
    parameters reach the command's body (:data:`QUICK`) as typer's do (``tests/test_quick_edit.py``
    compares the two on every option and on generated command lines)."""
    verbose = False
    words = list(argv)
    while words and words[0] in _VERBOSE:
        verbose, words = True, words[1:]
    if not words and sys.stdin.isatty() and sys.stdout.isatty():
        words = ["chat"]  # plain `cog` on a terminal is `cog chat` (elsewhere typer prints the help)
    if not words or words[0] not in QUICK or any(w in _TYPER_ONLY for w in words):
        return None
    name = words[0]
    spec = _spec()
    if spec is None:
        return None
    from cogcli.cli.ray_option import ray_address

    params = parse(spec["commands"][name], ray_address(words[1:]) if name == "edit" else words[1:])
    if params is None:
        return None
    with command_line():
        setup_logging(verbose)
        try:
            return _run(name, spec["commands"][name], params)
        except (KeyboardInterrupt, EOFError):  # before the run watches the signals: as typer ends
            sys.stderr.write("\nAborted!\n")
            return 1
        except BrokenPipeError:  # stdout's reader went away (cog tools | head -1): said nothing, as typer ends
            return 1


def _run(command: str, params_spec: list[dict[str, Any]], params: dict[str, Any]) -> int:
    import importlib

    settings = {p["name"] for p in params_spec if p.get("setting")}
    if settings:
        from cogcli.cli.setting_flags import checked_flags

        flags = checked_flags({name: params.pop(name) for name in settings})
        if flags is None:
            return 2
        params["flags"] = flags
    module, function, collector = QUICK[command]
    body = getattr(importlib.import_module(module), function)
    if collector == "started":  # the collector back on once the run or the call is under way
        return int(body(**params, on_started=resume_gc))
    if collector == "now":  # as typer's callback does before a command that is not brief
        resume_gc()
    return int(body(**params))


def _spec() -> dict[str, Any] | None:
    import json
    from pathlib import Path

    try:
        spec = json.loads((Path(__file__).with_name(SPEC_FILE)).read_text(encoding="utf-8"))
        commands = spec["commands"]
        if spec["key"] != spec_key() or not all(isinstance(commands.get(n), list) for n in QUICK):
            return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # none, unreadable, not one write_spec wrote
        return None
    return spec


def parse(params: list[dict[str, Any]], words: list[str]) -> dict[str, Any] | None:
    """The parameters ``words`` give (each not given: its default), or None for a word the spec
    does not know, a value that does not convert or is out of bounds, too many arguments."""
    options = {opt: p for p in params if p["kind"] == "option" for opt in p["opts"]}
    negated = {opt: p for p in params if p["kind"] == "option" for opt in p.get("secondary", ())}
    values: dict[str, Any] = {p["name"]: p["default"] for p in params}
    given: list[str] = []
    i, only_arguments = 0, False
    while i < len(words):
        word = words[i]
        i += 1
        if only_arguments or word == "-" or not word.startswith("-"):
            given.append(word)
            continue
        if word == "--":
            only_arguments = True
            continue
        name, equals, attached = word.partition("=") if word.startswith("--") else (word, "", "")
        if name in negated and not equals:
            values[negated[name]["name"]] = False
            continue
        param = options.get(name)
        if param is None or (param["flag"] and equals):
            return None
        if param["flag"]:
            values[param["name"]] = True
            continue
        if not equals:
            if i >= len(words):
                return None
            attached, i = words[i], i + 1
        value = _convert(param, attached)
        if value is None:
            return None
        if param["multiple"]:
            values[param["name"]] = [*(values[param["name"]] or []), value]
        else:
            values[param["name"]] = value
    for param in (p for p in params if p["kind"] == "argument"):
        if param.get("variadic"):  # all the words left (typer: a list, or None for none)
            taken, given = given, []
            values[param["name"]] = [_convert(param, w) for w in taken] or None
            if None in (values[param["name"]] or []):
                return None
        elif given:
            values[param["name"]] = _convert(param, given.pop(0))
            if values[param["name"]] is None:
                return None
        elif param.get("required"):
            return None
    return values if not given else None


def _convert(param: dict[str, Any], word: str) -> Any:
    """``word`` as the parameter's type (None: not one; typer then says why)."""
    import re
    from pathlib import Path

    kind = param["type"]
    if kind == "str":
        return word
    if kind == "path":
        return Path(word)
    if kind == "choice":
        return word if word in param["choices"] else None
    if kind in ("int", "float"):
        if not re.fullmatch(r"[0-9]+" if kind == "int" else r"[0-9]+(\.[0-9]+)?", word):
            return None
        number = int(word) if kind == "int" else float(word)
        low, high = param.get("min"), param.get("max")
        return None if (low is not None and number < low) or (high is not None and number > high) else number
    return None


#: how the spec is written again (typer's own commands, then :func:`write_spec`)
REWRITE = ("python -c \"import typer.main; from cogcli.cli import app; from cogcli.cli.lean_start import write_spec; "
           "write_spec(typer.main.get_command(app).commands)\"")


def write_spec(commands: Any) -> None:
    """Write :data:`SPEC_FILE` from typer's own commands (``commands``: typer's click commands by
    name) after a change to one of :data:`SPEC_SOURCES` (:data:`REWRITE`; ``tests/test_quick_edit.py``
    fails until it is written again)."""
    import json
    from pathlib import Path

    spec = {"key": spec_key(), "commands": {name: make_spec(commands[name]) for name in QUICK}}
    Path(__file__).with_name(SPEC_FILE).write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")


def make_spec(command: Any) -> list[dict[str, Any]]:
    """One command's parameters as typer makes them."""
    import enum
    import pathlib
    import typing

    from cogcli.settings.options import BY_NAME

    params = []
    for param in command.params:
        annotation = param.type_descriptor.annotation
        multiple = bool(param.multiple)
        variadic = param.param_type_name == "argument" and param.nargs == -1
        if multiple or variadic:
            annotation = typing.get_args(annotation)[0]
        if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            kind, choices = "choice", [m.value for m in annotation]
        else:
            kind, choices = {str: "str", pathlib.Path: "path", int: "int", float: "float", bool: "bool"}[annotation], None
        default = param.default.value if isinstance(param.default, enum.Enum) else param.default
        entry: dict[str, Any] = {"name": param.name, "kind": param.param_type_name, "type": kind, "default": default,
                                 "multiple": multiple, "flag": bool(getattr(param, "is_flag", False))}
        if param.param_type_name == "option":
            entry["opts"] = list(param.opts)
            entry["secondary"] = list(param.secondary_opts)
        else:
            entry["required"], entry["variadic"] = bool(param.required), variadic
        if choices is not None:
            entry["choices"] = choices
        if param.min is not None or param.max is not None:
            entry["min"], entry["max"] = param.min, param.max
        if param.name in BY_NAME:
            entry["setting"] = True
        params.append(entry)
    return params
