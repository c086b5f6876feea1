"""What the person and CI read carries no attack: no workflow command from the model's or a tool's
text in ``--format github``, no credential in a tool's name, none from the variables handed to a
test (a URL's password, a passed value, in hex too), and no person state (the undo key) inside
the workspace.

Each attack is shown working with its defence switched off (in process, and for the end-to-end
runs by the same ``cog`` started with the defences patched away) and failing with it, as root and
as an unprivileged user.
"""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from .conftest import Runner, needs_bwrap
from .workflow_log import WorkflowLog

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token's shape
#: passwords in URL-valued variables the tests receive (GOPROXY is allowed by default, the rest a workspace's pass_env)
URLS = {
    "GOPROXY": ("https://gouser:GoPass-1111aaaa@proxy.invalid,direct", "GoPass-1111aaaa"),
    "DATABASE_URL": ("postgres://app:DbPass-2222bbbb@db.invalid/x", "DbPass-2222bbbb"),
    "PIP_INDEX_URL": ("https://pip:PipPass-3333cccc@pypi.invalid/simple", "PipPass-3333cccc"),
    "HTTPS_PROXY": ("http://px:PxPass-4444dddd@proxy.invalid:3128", "PxPass-4444dddd"),
}
#: lines a runner obeys, as the model and a test wrote them
HOSTILE = ["::error file=README.md,line=1::PWNED", "   ::add-mask::PWNED", "see ##[set-output name=PWNED]x", "\t::stop-commands::PWNED"]
PRINT_ENV = "; ".join(f"printenv {n} | od -An -tx1 | tr -d ' \\n'; echo" for n in URLS)
SHELL_HOSTILE = "printf '%s\\n' " + " ".join(f"'{line}'" for line in HOSTILE)

#: the same cog with every defence of this file switched off: the old renderer, names and
#: environment values as they were, the state folder wherever XDG_STATE_HOME says
DEFENCES_OFF = """
import cogcli.loop.turn as turn, cogcli.render.github as gh, cogcli.secrets.environment as env
import workspace_tools.sandbox.environment as sandbox_env, workspace_tools.files.journal_key as key
from cogcli.shown.visible import visible
turn.shown_name = lambda name, forms=None: name
sandbox_env.remember_run_secrets = lambda values: None
env.url_credentials = lambda text: set()
key.resolves_inside = lambda path, folder: False
gh.escape_data = lambda t: t.replace("%", "%25").replace("\\r", "%0D").replace("\\n", "%0A")
def _line(self, text):
    for line in visible(text).split("\\n"):
        self._write(" " + line if line.startswith("::") else line)
gh.GithubRenderer._line = _line
from cogcli.cli import main; main()
"""


def cassette(runner: Runner, text: str, *calls: tuple[str, dict[str, Any]]) -> str:
    path = runner.scratch("cassette") / "c.jsonl"
    turns: list[dict[str, Any]] = [{"type": "cassette", "schemaVersion": 1, "model": "test:attacker"}]
    turns.append({"type": "turn", "text": text, "toolCalls": [{"id": f"c{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(calls)]})
    turns.append({"type": "turn", "text": "Done."})
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    runner.own(path.parent)
    return f"replay:{path}"


def cog(runner: Runner, args: list[str], repo: Path, env: dict[str, str], defended: bool) -> Any:
    if defended:
        return runner.cog(args, repo, env)
    return runner.run([runner.python, "-c", DEFENCES_OFF, *args], repo, env, timeout=180)


# --- 1. GitHub workflow commands --------------------------------------------------------------------


def old_renderer(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--format github`` as it was: a space before a line starting ``::``, nothing else."""
    from cogcli.render import github
    from cogcli.shown.visible import visible

    def line(self: Any, text: str) -> None:
        for piece in visible(text).split("\n"):
            self._write(" " + piece if piece.startswith("::") else piece)

    monkeypatch.setattr(github.GithubRenderer, "_line", line)
    monkeypatch.setattr(github, "escape_data", lambda t: t.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def draw(text: str, output: str, failure: str) -> str:
    from cogcli.render.github import GithubRenderer
    from cogcli.wire.events import FinishEvent, StartEvent, TextDeltaEvent, TextEndEvent, TextStartEvent, ToolCallStartEvent, ToolResultEvent

    out = io.StringIO()
    renderer = GithubRenderer(out)
    report = {"framework": "pytest", "passed": 0, "failed": 1, "failures": [{"name": "t", "file": "a.py", "line": 1, "message": failure}]}
    for event in [StartEvent(thread_id="t", message_id="m"), TextStartEvent(id="x"), TextDeltaEvent(id="x", delta=text), TextEndEvent(id="x"),
                  ToolCallStartEvent(id="c", tool_name="run_tests"),
                  ToolResultEvent(id="c", tool_call_id="c", tool_name="run_tests", result=output, details={"testReport": report},
                                  presentation={"label": "Run tests", "detail": "all"}),
                  FinishEvent(status="completed", message_id="m", thread_id="t")]:
        renderer.handle(event)
    renderer.close()
    return out.getvalue()


@pytest.mark.parametrize("defended", [False, True], ids=["old-renderer", "defended"])
def test_the_runner_obeys_no_line_of_the_models_or_a_tools_text(defended: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not defended:
        old_renderer(monkeypatch)
    text = "\n".join(HOSTILE)
    log = WorkflowLog().read(draw(text, text, "assert 1 ##[add-mask]PWNED"))
    obeyed = [c for c in log.commands if "PWNED" in c.name + c.data + json.dumps(c.properties) and c.name != "group"]
    if not defended:
        assert {c.name for c in obeyed} >= {"error", "add-mask", "stop-commands"}, log.commands  # the attack works
        return
    assert obeyed == [] or all(c.name == "error" and c.properties.get("file") == "a.py" for c in obeyed), obeyed
    assert log.names() <= {"group", "endgroup", "error", "stop-commands"} and log.stopped is None


# --- 2. a credential in a tool's name ---------------------------------------------------------------


def named_run(repo: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[Any], str]:
    """A run whose model calls ``tool_<token>``: (its JSON lines, its spans, its ATIF and JSONL export)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from cogcli.commands.thread import export_command
    from cogcli.models.scripted import Call, ScriptedModel, Turn
    from cogcli.session import Session
    from cogcli.settings.load import load_settings
    from cogcli.wire.telemetry import Telemetry

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = ScriptedModel([Turn("", [Call("c1", f"tool_{TOKEN}", {})]), Turn("Done.")])
    monkeypatch.setattr("cogcli.session.session.make_model", lambda settings, record=None: model)
    lines: list[str] = []
    session = Session(load_settings(repo, model="openai:gpt-4o-mini", sandbox="off"), telemetry=Telemetry(provider))

    async def go() -> None:
        session.prepare()
        async with session:
            await session.run("go", on_event=lambda e: lines.append(json.dumps(e.to_wire())))

    anyio.run(go)
    exports = ""
    for fmt in ("atif", "jsonl"):
        export_command(repo, None, fmt, repo.parent / f"export.{fmt}")
        exports += (repo.parent / f"export.{fmt}").read_text()
    return lines, list(exporter.get_finished_spans()), exports


@pytest.mark.parametrize("defended", [False, True], ids=["name-as-written", "defended"])
def test_a_token_in_a_tool_name_reaches_no_reader(defended: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("x = 1\n")
    if not defended:
        monkeypatch.setattr("cogcli.loop.turn.shown_name", lambda name, forms=None: name)
    lines, spans, exports = named_run(repo, monkeypatch)
    span_text = json.dumps([[s.name, dict(s.attributes or {})] for s in spans])
    places = {"JSON lines": "\n".join(lines), "spans": span_text, "exports": exports}
    leaked = {where for where, text in places.items() if TOKEN in text}
    if not defended:
        assert leaked == set(places), leaked  # the attack works: every reader has it
        return
    assert leaked == set(), leaked
    assert "tool_[REDACTED]" in places["JSON lines"] and "execute_tool tool_[REDACTED]" in span_text and "tool_[REDACTED]" in exports


def test_an_unknown_name_is_bounded_and_escaped() -> None:
    from cogcli.secrets.names import shown_name

    assert shown_name("run_tests") == "run_tests" and shown_name("mcp.server-x_y") == "mcp.server-x_y"
    assert shown_name("a\x1b]52;c;x\x07\u202e") == "a\\x1b]52;c;x\\x07\\u202e"
    assert len(shown_name("n" * 1000)) == 128 and shown_name("n" * 5000) == "<a name of 5000 characters>"
    assert shown_name(f"x-{TOKEN}.y") == "x-[REDACTED].y"


# --- 3. credentials in the variables a test receives ---------------------------------------------------


@pytest.mark.parametrize("defended", [False, True], ids=["values-not-secrets", "defended"])
def test_url_credentials_and_passed_values_are_secrets_in_every_encoding(defended: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from cogcli.secrets import environment
    from cogcli.secrets.redactor import redact
    from workspace_tools.sandbox import environment as sandbox_env

    for name, (value, _) in URLS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OPAQUE_SETTING", "opaque-9999eeee")
    if not defended:
        monkeypatch.setattr(sandbox_env, "remember_run_secrets", lambda values: None)
        monkeypatch.setattr(environment, "url_credentials", lambda text: set())
    monkeypatch.setattr(environment, "_run_secrets", set())
    env = sandbox_env.child_environment(workspace_pass_env=["DATABASE_URL", "PIP_INDEX_URL", "HTTPS_PROXY", "OPAQUE_SETTING"])
    assert {n: env.get(n) for n in URLS} == {n: v for n, (v, _) in URLS.items()}
    secrets = [p for _, p in URLS.values()] + ["opaque-9999eeee"]
    printed = "\n".join(s.encode().hex() for s in secrets)
    shown, _ = redact(printed)
    found = [s for s in secrets if s.encode().hex() in shown]
    assert found == ([] if defended else secrets)


# --- 4. person state inside the workspace -------------------------------------------------------------------


def test_state_home_inside_the_workspace_gives_way_to_the_default_or_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workspace_tools.files import journal_key

    home, repo = tmp_path / "home", tmp_path / "repo"
    (repo / "state").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(repo / "state"))
    assert journal_key.key_path(repo) == home / ".local" / "state" / "cog" / "journal.key"
    assert journal_key.key_path(tmp_path / "elsewhere") == repo / "state" / "cog" / "journal.key"
    monkeypatch.setenv("HOME", str(repo / "home"))  # the default is inside too: refused, with the fix
    with pytest.raises(journal_key.KeyUnusable, match="inside the workspace .*set XDG_STATE_HOME to a folder of yours outside"):
        journal_key.key_path(repo)


def _key_attack(runner: Runner) -> tuple[Path, str, dict[str, str]]:
    repo = runner.make_repo({"a.py": "x = 1\n"})
    (repo / "state").mkdir()
    runner.own(repo)
    model = cassette(runner, "", ("write_file", {"path": "b.py", "content": "y = 2\n"}),
                     ("run_command", {"command": "od -An -tx1 state/cog/journal.key | tr -d ' \\n'; echo"}))
    return repo, model, {"XDG_STATE_HOME": str(repo / "state")}


@needs_bwrap
@pytest.mark.slow
def test_the_undo_key_never_lands_in_the_workspace(runner: Runner) -> None:
    home_key = runner.base / "home" / ".local" / "state" / "cog" / "journal.key"
    for defended in (False, True):
        repo, model, env = _key_attack(runner)
        out = cog(runner, ["edit", "--json", "--yes", "--model", model, "go"], repo, env, defended)
        assert out.returncode == 0, out.stderr
        results = [json.loads(line) for line in out.stdout.splitlines() if '"tool-result"' in line]
        read = json.dumps([r.get("result") for r in results])
        planted = repo / "state" / "cog" / "journal.key"
        if not defended:  # the attack works: the key is in the workspace and the command read it to the model
            assert planted.exists() and planted.read_bytes().hex() in read, read
            continue
        assert not planted.exists() and home_key.exists(), os.listdir(repo / "state")
        assert home_key.read_bytes().hex() not in read
        assert "XDG_STATE_HOME" in out.stderr and "inside the workspace" in out.stderr, out.stderr


# --- end to end: one run a CI job would show ---------------------------------------------------------


@needs_bwrap
@pytest.mark.slow
def test_a_ci_log_and_an_export_carry_no_command_and_no_url_password(runner: Runner) -> None:
    env = {name: value for name, (value, _) in URLS.items()}
    passwords_hex = [p.encode().hex() for _, p in URLS.values()]
    for defended in (False, True):
        repo = runner.make_repo({"a.py": "x = 1\n", "pyproject.toml": '[tool.cog]\npass_env = ["DATABASE_URL", "PIP_INDEX_URL", "HTTPS_PROXY"]\n'})
        # (a replayed model calls only tools the run offers: the tool-name attack is played in process, above)
        model = cassette(runner, "\n".join(HOSTILE) + "\n", ("run_command", {"command": f"{SHELL_HOSTILE}; {PRINT_ENV}"}))
        out = cog(runner, ["edit", "--format", "github", "--yes", "--model", model, "go"], repo, env, defended)
        assert out.returncode == 0, out.stdout + out.stderr
        exports = "".join(runner.cog(["thread", "export", "--last", "--format", f], repo, env).stdout for f in ("atif", "jsonl"))
        log = WorkflowLog().read(out.stdout)
        obeyed = {c.name for c in log.commands if "PWNED" in c.name + c.data + json.dumps(c.properties) and c.name != "group"}
        leaked = {p for p in passwords_hex if p in exports}
        if not defended:  # the attack works: commands obeyed, all four passwords read by the model
            assert {"error", "add-mask"} <= obeyed and leaked == set(passwords_hex), (obeyed, leaked)
            continue
        assert obeyed == set() and log.names() <= {"group", "endgroup", "stop-commands"} and log.stopped is None, log.commands
        assert leaked == set() and not re.search("|".join(p for _, p in URLS.values()), out.stdout + exports)
