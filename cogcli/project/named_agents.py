"""Named agents: what a ``task`` call (:mod:`cogcli.agent_tools.delegate_task`) may run as, in Claude Code's format.

    .agents/agents/reviewer.md           the workspace's (shared through git: hostile text)
    ~/.config/cog/agents/reviewer.md     the person's ($XDG_CONFIG_HOME respected)

    ---
    name: reviewer
    description: Reviews a change for bugs
    tools: read_file, search_text, run_tests
    model: anthropic:claude-sonnet-4-5
    ---
    You review changes. …

The body is the subagent's own instructions, read after cog's system prompt and the project's
instruction files. A workspace agent is untrusted exactly like a custom command or a skill: its
files are read without following links and bounded (:mod:`cogcli.project.agent_files`), its text is
framed as the repository's and redacted, and it changes no setting or permission — its ``tools``
can only narrow the parent's (never add one; ``task`` is never among them), every call of its
subagent passes the same gate (plan mode, hooks, allow list, the person's approval), and its
``model`` is not used (a note says so): only the person's own agent may name a model. The person's
agent of a name wins over the workspace's.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cogcli.project.agent_files import command_files, front_matter

MAX_DESCRIPTION = 1024
MAX_AGENTS = 100


@dataclass(frozen=True)
class NamedAgent:
    """A named agent read from its Markdown file."""
    name: str
    description: str
    #: its instructions (the file without its front matter)
    body: str
    #: "workspace" or "personal"
    source: str
    #: the file, for people
    shown: str
    #: the tools it may use (None: the parent's, ``task`` left out)
    tools: tuple[str, ...] | None = None
    #: ``provider:model`` (the person's agents only)
    model: str | None = None


@dataclass
class NamedAgents:
    """The named agents found, with notes about files left out."""
    agents: dict[str, NamedAgent] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def get(self, name: str) -> NamedAgent | None:
        return self.agents.get(name.strip().lower())

    def names(self) -> str:
        return ", ".join(self.agents) or "none (add one as .agents/agents/NAME.md or ~/.config/cog/agents/NAME.md)"

    def tool_warnings(self, known: Collection[str], *, mcp: bool = False) -> list[str]:
        """A warning for each agent whose ``tools`` name one the session does not have (``known``),
        naming its file and the tool, with a did-you-mean: said when the agents are loaded, not only
        when a ``task`` call runs as the agent and fails. ``mcp``: MCP servers are configured, whose
        tools are known only once they connect."""
        from cogcli.contract.prepare import did_you_mean

        choices = sorted(known)
        out = []
        for agent in self.agents.values():
            for name in agent.tools or ():
                if name in known:
                    continue
                guess = did_you_mean(name, choices).strip()
                out.append(f"warning: {agent.shown}: its tools name {name!r}, which is no tool here"
                           + (f" ({guess})" if guess else "") + (" unless an MCP server gives it" if mcp else "")
                           + f"; a task run as {agent.name} fails until it is fixed")
        return out

    def prompt_lines(self) -> str:
        """The agents ``task`` may run as, for its description ("" for none)."""
        from cogcli.secrets.redactor import redact

        return "\n".join(f"- {a.name}: {redact(a.description)[0]}" for a in self.agents.values())


def load_named_agents(root: Path | None, environ: Mapping[str, str] | None = None) -> NamedAgents:
    """The person's agents, then the workspace's (``root``)."""
    found = command_files(root, environ, kind="agents")
    out = NamedAgents(notes=list(found.notes))
    for f in found.files:
        meta, body = front_matter(f.text)
        name = (meta.get("name") or f.name).strip().lower()
        if name != f.name.lower():
            out.notes.append(f"{f.shown} left out: its name {name!r} is not its file's ({f.name})")
            continue
        if name in out.agents:
            out.notes.append(f"{f.shown} left out: the agent {name} is {out.agents[name].shown}")
            continue
        description = " ".join(meta.get("description", "").split())[:MAX_DESCRIPTION]
        if not description or not body.strip():
            out.notes.append(f"{f.shown} left out: it needs a description in its front matter and instructions below it")
            continue
        if len(out.agents) >= MAX_AGENTS:
            out.notes.append(f"{f.shown} left out: more than {MAX_AGENTS} agents")
            continue
        tools = tuple(t.strip() for t in meta["tools"].split(",") if t.strip()) if meta.get("tools") else None
        model = meta.get("model", "").strip() or None
        model = None if model == "inherit" else model
        if model is not None and f.source != "personal":
            out.notes.append(f"{f.shown}: its model {model!r} is not used (a workspace agent runs on the session's model)")
            model = None
        out.agents[name] = NamedAgent(name, description, body.strip(), f.source, f.shown, tools, model)
    return out
