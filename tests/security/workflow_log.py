"""A GitHub Actions log read as the runner reads it, from GitHub's documented rules ("Workflow
commands for GitHub Actions") and the runner's behaviour the attacker found:

- the output is split into lines at ``\\n``, ``\\r\\n`` or a lone ``\\r``;
- a line's leading whitespace is trimmed, then ``::name k=v,k=v::data`` is a command;
- otherwise the legacy form ``##[name k=v;k=v]data`` is a command wherever ``##[`` is in the line;
- after ``::stop-commands::TOKEN`` nothing is a command until ``::TOKEN::``;
- data is unescaped ``%0D`` ``%0A`` ``%25``, properties also ``%3A`` ``%2C``.

Every name counts (the runner only acts on names it knows; counting all is stricter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class Command:
    name: str
    properties: dict[str, str]
    data: str


def _unescape(text: str, prop: bool) -> str:
    pairs = [("%0D", "\r"), ("%0A", "\n")] + ([("%3A", ":"), ("%2C", ",")] if prop else []) + [("%25", "%")]
    for escaped, plain in pairs:
        text = text.replace(escaped, plain)
    return text


@dataclass
class WorkflowLog:
    """Feed it a log (:meth:`read`); :attr:`commands` are what the runner would obey."""

    commands: list[Command] = field(default_factory=list)
    stopped: str | None = None

    def read(self, output: str) -> WorkflowLog:
        for line in re.split(r"\r\n|\r|\n", output):
            found = parse(line)
            if found is None:
                continue
            if self.stopped is not None:
                if found.name == self.stopped:
                    self.stopped = None
                continue
            if found.name == "stop-commands":
                self.stopped = found.data
            self.commands.append(found)
        return self

    def names(self) -> set[str]:
        return {c.name for c in self.commands}


def parse(line: str) -> Command | None:
    """The command ``line`` is for the runner, or None."""
    trimmed = line.lstrip()
    if trimmed.startswith("::"):
        end = trimmed.find("::", 2)
        if end >= 0:
            info, data = trimmed[2:end], trimmed[end + 2 :]
            name, _, props = info.partition(" ")
            if name:
                properties = {}
                for pair in filter(None, props.split(",")):
                    key, _, value = pair.partition("=")
                    properties[key] = _unescape(value, True)
                return Command(name, properties, _unescape(data, False))
    at = line.find("##[")
    if at >= 0:
        close = line.find("]", at)
        if close >= 0:
            name, _, props = line[at + 3 : close].partition(" ")
            if name:
                properties = dict(p.partition("=")[::2] for p in filter(None, props.split(";")))
                return Command(name, properties, line[close + 1 :])
    return None
