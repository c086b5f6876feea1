"""What the console script changes in typer to start sooner (cogcli/cli/lean_start.py): every
parameter of every cog command coerces each value exactly as typer's own coercion does."""

from __future__ import annotations

import enum
from typing import Any

import pytest

typer_core = pytest.importorskip("typer.core")
from typer import _coercion  # noqa: E402


def _parameters() -> list[tuple[Any, Any]]:
    """(command, parameter) for every parameter of every cog command, groups walked."""
    import typer.main

    from cogcli.cli import app  # every command declared; importing typer_app installed the lazy coercion

    found: list[tuple[Any, Any]] = []

    def walk(command: Any) -> None:
        for param in command.params:
            found.append((command, param))
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(app))
    return found


def _values(param: Any) -> list[Any]:
    annotation = param.type_descriptor.annotation
    values: list[Any] = [None, "3", "x", "", "-1", "9999", "true", "a/b.txt", ("a", "b"), ["1"]]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        values += list(annotation) + [m.value for m in annotation] + [m.value.upper() for m in annotation]
    if param.default is not None and not callable(param.default):
        values.append(param.default)
    return values


def _outcome(runtime: Any, value: Any, param: Any, ctx: Any) -> tuple[str, Any]:
    try:
        return "value", runtime.coerce(value, param=param, ctx=ctx)
    except Exception as exc:  # typer's BadParameter and friends: the same kind and words
        return type(exc).__name__, str(exc)


def test_every_parameter_coerces_every_value_as_typer_does() -> None:
    import click  # noqa: F401  # typer's own copy is what it uses; the context below is typer's

    from typer._click import Context

    params = [(c, p) for c, p in _parameters() if isinstance(p, typer_core._TyperParameter)]
    assert len(params) > 100  # every command's flags, the settings' ones too
    lazy = 0
    for command, param in params:
        ctx = Context(command)
        for value in _values(param):
            param._runtime_param = None
            deferred = param.get_runtime_param()
            got = _outcome(deferred, value, param, ctx)
            expected = _outcome(_coercion.build_runtime_param(param.type_descriptor), value, param, ctx)
            assert got == expected, (command.name, param.name, value)
            lazy += param._runtime_param is None  # answered without typer's adapter
    assert lazy > 0  # the lazy path was taken (a missing value, a plain string, a default choice)


def test_a_missing_or_plain_value_builds_no_pydantic_adapter(make_repo: Any) -> None:
    """`cog edit "say ok" --model …` and `cog tools` parse without typer's pydantic adapters."""
    import json
    import subprocess
    import sys

    from cli_helpers import cog_env

    code = ("import atexit, json, runpy, sys\n"
            "atexit.register(lambda: sys.stderr.write('MODULES ' + json.dumps(sorted(sys.modules)) + '\\n'))\n"
            "sys.argv = ['cog', 'tools']\nrunpy.run_module('cogcli', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=make_repo("calc"), env=cog_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    modules = json.loads(next(line for line in done.stderr.splitlines() if line.startswith("MODULES ")).removeprefix("MODULES "))
    assert "typer._adapters" not in modules
