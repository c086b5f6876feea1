"""A command's typer options, made from the settings' one definition (:mod:`cogcli.settings.options`):
``@with_settings(CHAT)`` gives a command every setting that applies to it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Optional

from cogcli.settings.options import Setting, SettingError, SettingFlags, applies_to, from_flags

__all__ = ["checked_flags", "with_settings"]


def _option(setting: Setting) -> Any:
    """``Annotated[Optional[T], typer.Option(…)]`` for one setting (absent: None)."""
    import typer

    extra: dict[str, Any] = {}
    kind = setting.kind
    if kind == "list":
        base: Any = Optional[list[str]]
    elif kind == "bool":
        base = Optional[bool]
    elif kind == "int":
        base = Optional[int]
    elif kind == "float":
        base = Optional[float]
    else:
        base = Optional[str]
    if kind == "choice":
        import enum

        base = Optional[enum.Enum(setting.name.title().replace("_", ""), {c: c for c in setting.choices}, type=str)]  # type: ignore[misc]
        extra["metavar"] = "|".join(setting.choices)
    if kind in ("int", "float") and setting.inclusive:  # more than 0 (timeout): Setting.check says it, with its fix
        if setting.minimum is not None:
            extra["min"] = setting.minimum
        if setting.maximum is not None:
            extra["max"] = setting.maximum
    if setting.metavar:
        extra["metavar"] = setting.metavar
    return Annotated[base, typer.Option(*setting.flags, help=setting.help, show_default=False, **extra)]


def with_settings(command: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a typer command the flags of every setting that applies to ``command``: the function
    takes ``flags: SettingFlags`` (the flags given, checked) in their place.

        @app.command()
        @with_settings(CHAT)
        def chat(directory: DirectoryOption = None, *, flags: SettingFlags) -> None: …
    """

    import functools
    import inspect  # (here: the quick path imports this module for checked_flags alone)

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(func, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "flags"]
        settings = applies_to(command)
        clash = {p.name for p in own} & {s.name for s in settings}
        if clash:
            raise TypeError(f"{func.__name__} declares {', '.join(sorted(clash))} itself; they are settings (cogcli.settings.options)")
        added = [inspect.Parameter(s.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=_option(s)) for s in settings]
        names = [s.name for s in settings]

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            flags = checked_flags({name: kwargs.pop(name, None) for name in names})
            if flags is None:
                import typer

                raise typer.Exit(2)
            return func(*args, **kwargs, flags=flags)

        positional = [p for p in own if p.kind is not inspect.Parameter.KEYWORD_ONLY]
        keyword = [p for p in own if p.kind is inspect.Parameter.KEYWORD_ONLY]
        wrapper.__signature__ = signature.replace(parameters=[*positional, *keyword, *added])  # type: ignore[attr-defined]
        return wrapper

    return decorate



def checked_flags(values: dict[str, Any]) -> SettingFlags | None:
    """The settings given as flags (``values``: by setting name, None when not given), checked; a
    bad one is said (naming the flag and what it takes) and None returned (exit 2)."""
    try:
        return from_flags(values)
    except SettingError as exc:
        from cogcli.shown.visible import say

        say(str(exc))
        return None
