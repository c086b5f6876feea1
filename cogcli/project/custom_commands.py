"""Custom commands: ``/NAME args`` runs the instruction a Markdown file holds.

    .agents/commands/review.md            the workspace's (shared through git: hostile text)
    ~/.config/cog/commands/review.md      the person's ($XDG_CONFIG_HOME respected)

    ---
    description: Review the change for bugs
    model: anthropic:claude-sonnet-4-5
    argument-hint: [path]
    ---
    Review the uncommitted change under $1 for bugs. Focus: $ARGUMENTS

``$ARGUMENTS`` is everything after the name, ``$1`` … ``$9`` its words (shell-like quoting); a file
that uses neither gets the arguments appended. The text becomes the run's instruction, so a
workspace command is exactly as trusted as a typed instruction from a stranger: it changes no
setting. Built-in commands (``/undo``, ``/compact``, ``/plan``, …) come first and a file never
shadows one; the person's command of a name wins over the workspace's. A command's ``model`` is
used for its run unless ``--model`` was given; a workspace command's model is weaker still (not
over ``COG_MODEL``) and, like the workspace's own ``model`` setting, may replay only a cassette
inside the workspace (:func:`cogcli.settings.load._workspace_model`).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cogcli.project.agent_files import command_files, front_matter

#: ``$ARGUMENTS``, ``$1`` … ``$9``
_PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9])")
#: the most characters of a description shown (completion menus, ACP)
MAX_DESCRIPTION = 200


@dataclass(frozen=True)
class CustomCommand:
    """A ``/NAME`` command read from its Markdown file."""
    name: str
    description: str
    body: str
    #: "workspace" or "personal"
    source: str
    #: the file, for people: ``.agents/commands/review.md``
    shown: str
    model: str | None = None
    #: what to type after the name (``argument-hint``), for completion menus
    hint: str = ""

    def expand(self, arguments: str) -> str:
        """The instruction: the body with ``$ARGUMENTS`` and ``$1`` … ``$9`` filled in."""
        arguments = arguments.strip()
        try:
            words = shlex.split(arguments)
        except ValueError:  # an unclosed quote: plain words
            words = arguments.split()
        if not _PLACEHOLDER.search(self.body):
            return f"{self.body.rstrip()}\n\n{arguments}" if arguments else self.body.strip()

        def fill(match: re.Match[str]) -> str:
            key = match.group(1)
            if key == "ARGUMENTS":
                return arguments
            n = int(key)
            return words[n - 1] if n <= len(words) else ""

        return _PLACEHOLDER.sub(fill, self.body).strip()


@dataclass(frozen=True)
class Invocation:
    """``/NAME args`` resolved: the command and the instruction it makes."""

    command: CustomCommand
    arguments: str
    instruction: str


@dataclass
class CommandSet:
    """The commands a front end offers besides its built-in ones, by lower-case name."""

    commands: dict[str, CustomCommand] = field(default_factory=dict)
    #: files left out and why (a link, a name shadowing a built-in, too big, …)
    notes: list[str] = field(default_factory=list)

    def get(self, name: str) -> CustomCommand | None:
        return self.commands.get(name.lstrip("/").lower())

    def resolve(self, line: str) -> Invocation | None:
        """``/NAME args`` → its :class:`Invocation` (None: not a command line, or no such command)."""
        parsed = parse_command_line(line)
        if parsed is None:
            return None
        command = self.get(parsed[0])
        if command is None:
            return None
        return Invocation(command, parsed[1], command.expand(parsed[1]))

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.commands.values())

    def __len__(self) -> int:
        return len(self.commands)


def parse_command_line(line: str) -> tuple[str, str] | None:
    """``("name", "args")`` for ``/name args``; None when ``line`` is no command (``/usr/bin/env …``
    is a path: a first word with another ``/`` in it)."""
    if not line.startswith("/"):
        return None
    first, _, rest = line.partition("\n")
    word, _, args = first.partition(" ")
    if len(word) < 2 or "/" in word[1:]:
        return None
    return word[1:].lower(), (args + ("\n" + rest if rest else "")).strip()


def load_commands(root: Path | None, builtins: Collection[str] = (), environ: Mapping[str, str] | None = None) -> CommandSet:
    """The person's commands, then the workspace's (``root``): a name that is a built-in (given
    with or without ``/``) or already taken is left out with a note."""
    from cogcli.shown.visible import visible

    reserved = {b.lstrip("/").lower() for b in builtins}
    found = command_files(root, environ)
    out = CommandSet(notes=list(found.notes))
    for f in found.files:
        name = f.name.lower()
        if name in reserved:
            out.notes.append(f"{f.shown} left out: /{visible(name, one_line=True)} is a built-in command")
            continue
        if name in out.commands:
            kept = out.commands[name]
            out.notes.append(f"{f.shown} left out: /{visible(name, one_line=True)} is {kept.shown}")
            continue
        meta, body = front_matter(f.text)
        if not body.strip():
            out.notes.append(f"{f.shown} left out: it holds no instruction")
            continue
        description = " ".join(meta.get("description", "").split())[:MAX_DESCRIPTION] or _first_line(body)
        out.commands[name] = CustomCommand(
            name=name, description=description, body=body, source=f.source, shown=f.shown,
            model=meta.get("model") or None, hint=" ".join(meta.get("argument-hint", "").split())[:80],
        )
    return out


def _first_line(body: str) -> str:
    for line in body.splitlines():
        if line.strip():
            return line.strip().lstrip("#").strip()[:MAX_DESCRIPTION]
    return ""


def command_model(invocation: Invocation, root: Path, flag_model: str | None) -> str | None:
    """The model the command's run uses in place of the settings' (None: the settings decide).
    ``--model`` always wins; a workspace command's model does not beat ``COG_MODEL`` either, and a
    ``replay:`` cassette it names must be inside the workspace (else :class:`ConfigError`)."""
    command = invocation.command
    if not command.model or flag_model:
        return None
    if command.source == "personal":
        return command.model
    if os.environ.get("COG_MODEL", "").strip():
        return None
    from cogcli.settings.load import _workspace_model  # the workspace's model setting's own rule

    return _workspace_model(root, command.model, command.shown)


def builtin_names() -> list[str]:
    """Every front end's built-in command names (``cog chat``'s, ``/plan``, ``/go``): a file never
    takes one, so a command means the same in the chat, ``cog edit`` and an editor."""
    from cogcli.project.slash_commands import COMMANDS

    return [*COMMANDS, "/plan", "/go"]


def expand_instruction(text: str, root: Path, flag_model: str | None = None) -> tuple[str, str | None, Invocation | None]:
    """``cog edit "/NAME args"``: (the instruction, the model the command picks or None, the
    invocation or None). Text that is no command line comes back as it is; ``/NAME`` naming no
    command is a :class:`ConfigError` listing the ones there are."""
    from cogcli.contract.errors import ConfigError
    from cogcli.shown.visible import visible

    parsed = parse_command_line(text)
    if parsed is None:
        return text, None, None
    commands = load_commands(root, builtin_names())
    invocation = commands.resolve(text)
    if invocation is None:
        known = ", ".join(f"/{c.name}" for c in commands) or "none here"
        where = ".agents/commands/NAME.md or ~/.config/cog/commands/NAME.md"
        why = [n for n in commands.notes if f"/{parsed[0]}.md ".casefold() in f"{n} ".casefold()]  # its file, left out
        raise ConfigError(
            f"unknown command /{visible(parsed[0], one_line=True)} (custom commands: {known}; they are {where}). "
            + "".join(f"{n}. " for n in why)
            + "To send text that starts with / as an instruction, start it with a space or another word"
        )
    return invocation.instruction, command_model(invocation, root, flag_model), invocation
