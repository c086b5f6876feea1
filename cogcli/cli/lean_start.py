"""What the ``cog`` console script changes in its libraries to start sooner (issue 53).

**No pydantic plugins looked up.** pydantic asks ``importlib.metadata`` for the ``pydantic``
entry points of every installed distribution when it makes its first validator (importing
``importlib.metadata``, ``zipfile``, ``csv``… and reading each distribution's metadata: about 47M
instructions of ``cog edit``'s 2.1G before its first request, 100M of a bare first model). cog's own
models use no plugin, so the console script tells pydantic there are none
(:func:`no_pydantic_plugins`) — unless the person set ``PYDANTIC_DISABLE_PLUGINS`` (to anything,
even empty: ``PYDANTIC_DISABLE_PLUGINS= cog …`` loads every plugin, pydantic's own rule). The
environment is not changed: the programs cog starts see the person's. Only the command line does
this; ``import cogcli`` in another program changes nothing."""

from __future__ import annotations

__all__ = ["no_pydantic_plugins"]


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
