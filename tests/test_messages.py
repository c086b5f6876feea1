"""Messages that name the real cause: every flag a message names exists, a provider's 401/403
is a configuration error (exit 2), a short new_text never claims the edit was made already."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from cli_helpers import run_cog
from model_servers import AnthropicServer, Fail, OpenAIServer
from ws_helpers import call

from cogcli.contract.errors import ErrorCode
from workspace_tools import workspace_tools

ROOT = Path(__file__).resolve().parents[1]
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
#: the programs whose own flags cog's messages may name (in the same string, shortly before the
#: flag), and what marks a test runner's own options: ``args=[…]``, a bare ``--`` before them, or
#: a runner's output cog matches (cargo's "HTTP request … --offline")
OTHER_PROGRAMS = re.compile(
    r"\b(git|diff|bwrap|bubblewrap|pytest|pip|python|npx|npm|poetry|hatch|pdm|uv|venv|cargo|go|node|vitest|jest|mocha|tape|ollama|pipenv|conda|tox|nox|run_tests|runner|SWE-bench)\b|args=|\s--\s|HTTP request"
)
#: parents of a one-word string that make it an argument vector or a declaration, not a message
NOT_A_MESSAGE = (ast.List, ast.Tuple, ast.Set, ast.Call, ast.Compare, ast.Subscript, ast.Starred)


def cog_options() -> set[str]:
    import typer.main

    from cogcli.cli import app

    found = {"--help"}

    def walk(command: object) -> None:
        for param in getattr(command, "params", []):
            found.update(o for o in (*param.opts, *param.secondary_opts) if o.startswith("--"))
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(app))
    return found


def flag_mentions() -> list[tuple[str, int, str, str]]:
    """(file, line, flag, text) for every `--flag` in a string of cog's code that reads as a message."""
    mentions = []
    for path in sorted([*ROOT.joinpath("cogcli").rglob("*.py"), *ROOT.joinpath("workspace_tools").rglob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            text = node.value
            parent = parents.get(node)
            if isinstance(parent, ast.JoinedStr):
                parent = parents.get(parent)
            if " " not in text.strip() and isinstance(parent, NOT_A_MESSAGE):
                continue  # "--no-color" in an argv list, "-C", "--directory" declaring an option
            for match in FLAG.finditer(text):
                if OTHER_PROGRAMS.search(text[max(0, match.start() - 300) : match.start()]):
                    continue  # git config --global …, diff --git …
                mentions.append((str(path.relative_to(ROOT)), node.lineno, match.group(), text))
    return mentions


def test_every_flag_a_message_names_exists() -> None:
    options = cog_options()
    assert {"--model", "--test-command", "--directory", "--allow-secret"} <= options
    unknown = [(f, line, flag) for f, line, flag, _ in flag_mentions() if flag not in options]
    assert unknown == [], "messages name flags cog does not have"


def test_the_scan_catches_a_made_up_flag(tmp_path: Path) -> None:
    """The scan itself works: the old missing-key message named --base-url, which cog never had."""
    assert "--base-url" not in cog_options()
    source = 'raise ConfigError(f"{spec} needs an API key: set OPENAI_BASE_URL / --base-url to a server")\nsource = "--base-url" if x else "env"\n'
    tree = ast.parse(source)
    texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    assert sum(bool(FLAG.search(t)) for t in texts) == 2


@pytest.mark.parametrize(("server_class", "status"), [(OpenAIServer, 401), (AnthropicServer, 403)])
def test_a_rejected_key_is_a_configuration_error_exit_2(make_repo, server_class, status: int) -> None:
    repo = make_repo("calc")
    with server_class([Fail(status, "invalid x-api-key")] * 3) as server:
        if server_class is OpenAIServer:
            env, model = {"OPENAI_API_KEY": "sk-bad", "OPENAI_BASE_URL": server.base_url}, "openai:gpt-4o-mini"
        else:
            env, model = {"ANTHROPIC_API_KEY": "sk-ant-bad", "ANTHROPIC_BASE_URL": server.base_url}, "anthropic:claude-sonnet-4-5"
        out = run_cog(["edit", "--model", model, "Fix the failing test."], repo, env=env)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "MODEL_CONFIG_ERROR" in out.stdout and f"HTTP {status}" in out.stdout
    assert len(server.requests) == 1  # not retried


@pytest.mark.parametrize("new_text", [")", "pass", "return x", "    x = 1\n"])
def test_a_short_new_text_never_claims_the_edit_was_made(tmp_path: Path, new_text: str) -> None:
    (tmp_path / "m.py").write_text("def f(x):\n    x = 1\n    pass\n    return x\n")
    result = call(workspace_tools(tmp_path), "edit_file", path="m.py", old_text="def g(y):", new_text=new_text)
    assert result.error_code == ErrorCode.EDIT_NO_MATCH
    assert "made already" not in result.error


def test_a_substantial_new_text_found_once_gets_the_hint(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def total(items):\n    return sum(item.price for item in items)\n")
    result = call(
        workspace_tools(tmp_path), "edit_file", path="m.py",
        old_text="    return sum(items)", new_text="    return sum(item.price for item in items)",
    )
    assert "new_text is already in the file (line 2)" in result.error and "made already" in result.error
