"""The workspace tools' specs kept between processes, and tools made when first used (issue 53).

A run's first model request needs each tool's name, description and parameter JSON Schema,
nothing more; making the tools imports their modules (runners, sandbox, shell, diagnostics: ~70
modules) and builds their parameter models. What a tool's spec is depends only on cog's code and
the options it was made with, so it is kept in the person's state folder (``tool-specs.json``, never
inside the workspace: :func:`cogcli.settings.person_state.state_home`), keyed by cog's version, the
size and time of every source file of ``workspace_tools`` and ``cogcli/contract`` and the options
(:func:`spec_key`). With the key's specs at hand, a session's tools are :class:`DeferredTool`: the
spec from the file, the tool itself made (its module imported) the first time anything else of it
is asked — its parameters, to validate a call; its ``execute``, to run one. A call is validated
by the real tool's own parameters model, as always; the file only says what the model is told.
Without a kept spec (the first run, a changed tree or option, an unreadable file), the tools are
made as before and their specs kept for the next process.

Nothing guarded moves: the sandbox check (:func:`workspace_tools.sandbox.bwrap.check_sandbox`)
runs before the tools are listed, as before; what a tool checks when it is made, it checks before
its first call."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cogcli.contract.tool import Tool

log = logging.getLogger("cogcli")

CACHE_FILE = "tool-specs.json"
#: the file's own layout
FORMAT = 1
#: keys kept (workspaces with other options: a test command, diagnostics)
MAX_KEYS = 16
Make = Callable[[], Tool[Any]]


class DeferredTool(Tool[Any]):
    """A tool known by its kept spec, made by ``make`` when anything beyond its name, description
    and parameter schema is asked. ``dataclasses.replace`` gives a real tool (made)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if "execute" in kwargs:  # dataclasses.replace(deferred, …): the real tool's fields, changed
            return Tool(**kwargs)
        return object.__new__(cls)

    def __init__(self, name: str, description: str, parameters_schema: Mapping[str, Any], make: Make) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "description", description)
        object.__setattr__(self, "_schema", dict(parameters_schema))
        object.__setattr__(self, "_make", make)
        object.__setattr__(self, "_made", None)
        object.__setattr__(self, "_making", threading.Lock())  # calls in worker threads make it once

    def made(self) -> Tool[Any]:
        """The tool itself, made on first need (its module imported then)."""
        tool: Tool[Any] | None = self._made  # type: ignore[has-type]
        if tool is None:
            with self._making:  # type: ignore[has-type]
                tool = self._made  # type: ignore[has-type]
                if tool is None:
                    tool = self._make()  # type: ignore[has-type]
                    if tool.name != self.name:
                        raise RuntimeError(f"the deferred tool {self.name!r} made {tool.name!r}")
                    object.__setattr__(self, "_made", tool)
        return tool

    @property
    def is_made(self) -> bool:
        return self._made is not None  # type: ignore[has-type]

    def input_schema(self) -> dict[str, Any]:
        return copy.deepcopy(self._schema)  # type: ignore[has-type]

    @property
    def close(self) -> Callable[[], None] | None:  # type: ignore[override]
        """Only a made tool holds anything (a tool never made started nothing)."""
        return None if self._made is None else self._made.close  # type: ignore[has-type]

    def __repr__(self) -> str:
        return f"DeferredTool({self.name!r}, made={self.is_made})"


def _forward(field: str) -> property:
    return property(lambda self: getattr(self.made(), field), doc=f"the made tool's ``{field}``")


for _field in dataclasses.fields(Tool):
    if _field.name not in ("name", "description", "close"):
        setattr(DeferredTool, _field.name, _forward(_field.name))


def spec_key(options: Mapping[str, Any], version: str) -> str | None:
    """What a spec kept for these tool options is valid for: cog's version, its tool sources (size
    and time of each file) and the options; None when an option cannot be told apart by its text
    (an object's address: nothing is kept then)."""
    shown = repr(sorted((name, sorted(value) if isinstance(value, (set, frozenset)) else value)
                        for name, value in options.items() if name != "journal"))
    if " at 0x" in shown:
        return None
    digest = hashlib.sha256(f"{version}\n{options.get('journal') is not None}\n{shown}\n".encode())
    import cogcli.contract
    import workspace_tools

    for package in (Path(workspace_tools.__file__).parent, Path(cogcli.contract.__file__).parent):
        for folder, dirs, files in os.walk(package):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    stat = os.stat(os.path.join(folder, name))
                    digest.update(f"{folder}/{name}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _path(root: Path) -> Path:
    from cogcli.settings.person_state import state_home

    return state_home(root) / CACHE_FILE


def read_specs(root: Path, key: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """The specs kept under ``key``: name -> (description, parameter schema); empty when none is
    kept, or the file is not one cog wrote (each entry checked)."""
    try:
        with open(_path(root), encoding="utf-8") as file:
            held = json.load(file)
        tools = held["keys"][key] if held.get("format") == FORMAT else {}
    except Exception:  # none yet, unreadable, another layout, no state folder outside the workspace
        return {}
    if not isinstance(tools, dict):
        return {}
    specs = {}
    for name, spec in tools.items():
        if not (isinstance(spec, dict) and isinstance(spec.get("description"), str) and isinstance(spec.get("parameters"), dict)):
            return {}
        specs[name] = (spec["description"], spec["parameters"])
    return specs


def keep_specs(root: Path, key: str, tools: list[Tool[Any]]) -> None:
    """Keep ``tools``' specs under ``key`` (0600, the file replaced whole; a failure only costs time)."""
    try:
        path = _path(root)
        try:
            with open(path, encoding="utf-8") as file:
                held = json.load(file)
            keys = dict(held["keys"]) if held.get("format") == FORMAT and isinstance(held.get("keys"), dict) else {}
        except Exception:
            keys = {}
        keys.pop(key, None)
        keys[key] = {t.name: {"description": t.description, "parameters": t.input_schema()} for t in tools}
        os.makedirs(path.parent, mode=0o700, exist_ok=True)
        partial = f"{path}.{os.getpid()}"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump({"format": FORMAT, "keys": dict(list(keys.items())[-MAX_KEYS:])}, file)
        os.replace(partial, path)
    except Exception:  # a read-only home, a state folder inside the workspace: made again next time
        log.debug("could not keep the tools' specs", exc_info=True)


def deferred_tools(root: Path, options: Mapping[str, Any], make_all: Callable[..., list[Tool[Any]]],
                   adjust: Callable[[Tool[Any]], Tool[Any]] | None = None) -> list[Tool[Any]]:
    """``make_all(**options)`` (:func:`workspace_tools.workspace_tools`), each tool deferred when its
    spec is kept for these options (``adjust``: applied to each tool as it is made); otherwise the
    tools are made and their specs kept."""
    from cogcli.version import __version__

    key = spec_key(options, __version__)
    kept = read_specs(root, key) if key is not None else {}
    missed: list[str] = []

    def defer(name: str, make: Make) -> Tool[Any]:
        made = make if adjust is None else (lambda: adjust(make()))
        spec = kept.get(name)
        if spec is None:
            missed.append(name)
            return made()
        return DeferredTool(name, spec[0], spec[1], made)

    tools = make_all(**options, defer=defer)
    if missed and key is not None:
        keep_specs(root, key, tools)
    return tools
