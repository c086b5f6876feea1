"""The slash commands of ``cog chat``: what each does (for ``/help`` and the completion menu) and
how a typed line is told apart from an instruction."""

from __future__ import annotations

#: name → (argument, what it does), in the order /help lists them
COMMANDS: dict[str, tuple[str, str]] = {
    "/undo": ("", "put back the files of the newest run not undone yet (again: walk further back); the model is told"),
    "/rewind": ("[N [both|code|conversation]]", "list the thread's runs; with N, walk back to before run N (files and conversation)"),
    "/allowed": ("[drop TOOL|clear]", "what [a]lways allowed for this chat session; drop asks again"),
    "/diff": ("", "what this session changed: each file its runs wrote, as it was before them against now"),
    "/jobs": ("[kill ID|PID | keep ID]", "background commands: the session's and those kept earlier here; kill ends one, keep lets it outlive the session"),
    "/image": ("PATH|clear", "attach an image (PNG, JPEG, GIF, WebP) the model sees with your next instruction"),
    "/model": ("PROVIDER:MODEL", "use this model from the next instruction on (no argument: say which is used)"),
    "/compact": ("", "summarize the conversation now; the model reads the summary instead of it from then on"),
    "/thread": ("", "the thread's id, the context used and left, this session's tokens and cost"),
    "/new": ("", "start a new thread with the next instruction"),
    "/plan": ("[INSTRUCTION]", "plan mode: only tools that change nothing run and the model ends with a plan (until /go)"),
    "/go": ("[NOTE]", "leave plan mode and carry out the plan"),
    "/help": ("", "this list"),
    "/exit": ("", "leave (Ctrl-D does too)"),
}


def parse(line: str) -> tuple[str, str] | None:
    """``(name, argument)`` when ``line`` is a slash command, None when it is an instruction. A
    first word with another ``/`` in it (``/usr/bin/env is missing``) is a path, so an instruction."""
    if not line.startswith("/"):
        return None
    word, _, rest = line.partition(" ")
    word = word.split("\n", 1)[0]
    if "/" in word[1:] or len(word) < 2:
        return None
    return word.lower(), rest.strip()


def help_text(custom: dict[str, tuple[str, str]] | None = None) -> str:
    """``/help``: the built-in commands, then ``custom`` ones (name → (argument, description), from
    ``.agents/commands`` and ``~/.config/cog/commands``)."""
    from cogcli.shown.visible import visible

    listed = {**COMMANDS, **{k: (visible(a, one_line=True), visible(w, one_line=True)) for k, (a, w) in (custom or {}).items()}}
    width = max(len(f"{name} {arg}".rstrip()) for name, (arg, _) in listed.items())
    lines = [f"  {f'{name} {arg}'.rstrip():<{width}}  {what}" for name, (arg, what) in listed.items()]
    keys = [
        "",
        "  Enter sends; Alt-Enter or a trailing \\ starts a new line; a paste stays one message.",
        "  Ctrl-C stops a run (the thread is kept) or clears the line; twice on an empty line, or Ctrl-D, leaves.",
    ]
    return "\n".join(["Commands:", *lines, *keys])


def unknown_text(name: str, custom: list[str] | None = None) -> str:
    from cogcli.shown.visible import visible

    names = ", ".join([*COMMANDS, *(custom or [])])
    return f"unknown command {visible(name, one_line=True)}; the commands are {names} (/help says what each does)"
