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
left as it is. ``cog tools``: 847M → 824M instructions."""

from __future__ import annotations

from typing import Any

__all__ = ["lazy_coercion", "no_pydantic_plugins"]


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
