"""The ``/undo``, ``/rewind`` and ``/allowed`` commands of the conversational front ends (``cog chat``,
``cog acp``): walking a thread back, and what the person allowed for the session. Each returns the
text to show; nothing here draws.

- ``/undo`` walks back the newest run that changed files and is not undone yet (again: further back);
  the next run is told what was undone.
- ``/rewind`` lists the thread's runs; ``/rewind N [both|code|conversation]`` walks back to before
  run N — by default files and conversation (the model no longer reads those runs).
- ``/allowed`` lists the tools answered ``[a]lways`` this session; ``/allowed drop TOOL`` (or
  ``/allowed clear``) asks for them again.
"""

from __future__ import annotations

from typing import Any

from cogcli.contract.errors import CogError
from cogcli.shown.visible import visible

WHAT = {"both": (True, True), "code": (True, False), "conversation": (False, True)}


def undo_text(session: Any, thread_id: str | None, to: str | None = None, what: str = "code") -> str:
    from cogcli.threads.undo import UndoRefused

    if not thread_id:
        return "nothing to undo: no run in this conversation yet"
    code, conversation = WHAT[what]
    try:
        plan = session.undo(thread_id, to=to, code=code, conversation=conversation)
    except UndoRefused as exc:
        return visible(f"undo refused: {exc.message}")
    except CogError as exc:
        return visible(exc.message)
    return visible("\n".join([*(f"note: {n}" for n in plan.notes), plan.summary()]))


def rewind_text(session: Any, thread_id: str | None, argument: str) -> str:
    """``/rewind``: the runs listed, or (``N [both|code|conversation]``) the thread walked back to before run N."""
    from cogcli.threads.undo import thread_runs

    if not thread_id:
        return "nothing to rewind: no run in this conversation yet"
    words = argument.split()
    if not words:
        runs = thread_runs(session.store().entries(thread_id))
        lines = ["The runs of this thread (/rewind N walks back to before run N: files and conversation; add code or conversation for one):"]
        for r in runs:
            marks = [m for m, on in (("files undone", r.code_undone), ("conversation rewound", r.rewound)) if on]
            lines.append(f"  {r.number:>3}  {r.title}" + (f"  [{', '.join(marks)}]" if marks else ""))
        return visible("\n".join(lines))
    what = words[1].lower() if len(words) > 1 else "both"
    if len(words) > 2 or what not in WHAT:
        return "usage: /rewind N [both|code|conversation] (/rewind alone lists the runs)"
    return undo_text(session, thread_id, to=words[0], what=what)


def slash_reply(session: Any, thread_id: str | None, text: str) -> str | None:
    """The reply to ``/undo [RUN]`` or ``/rewind [N [both|code|conversation]]`` typed as a prompt;
    None when ``text`` is no such command (an instruction)."""
    word, _, rest = text.strip().partition(" ")
    if word == "/undo":
        return undo_text(session, thread_id, to=rest.strip() or None)
    if word == "/rewind":
        return rewind_text(session, thread_id, rest)
    return None


def allowed_text(always: set[str], argument: str) -> str:
    """``/allowed``: what ``[a]lways`` allowed this session; ``drop TOOL`` / ``clear`` forgets it."""
    words = argument.split()
    if not words:
        if not always:
            return "Nothing is allowed always in this session: every call that needs approval asks."
        return "Allowed without asking for this chat session (/allowed drop TOOL asks again):\n" + "\n".join(
            f"  {visible(name, one_line=True)}" for name in sorted(always)
        )
    if words == ["clear"]:
        always.clear()
        return "Every call that needs approval asks again."
    if len(words) == 2 and words[0] == "drop":
        if words[1] not in always:
            return visible(f"{words[1]} was not allowed always; /allowed lists what is", one_line=True)
        always.discard(words[1])
        return visible(f"{words[1]} asks again from the next call", one_line=True)
    return "usage: /allowed, /allowed drop TOOL, /allowed clear"
