"""The adapters' frameworks are optional: ``import cogcli``, ``cog --help`` and ``cog tools`` import
none of them, importing an adapter module imports no framework until it is used, and a missing one
is an error naming the ``pip install`` that adds it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import cog_env

#: the frameworks behind cogcli.adapters (and the SDKs only the realtime tests use)
FRAMEWORKS = ("pydantic_ai", "agents", "openai", "google.genai")


def _run(code: str, cwd: Path) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=60, env=cog_env())
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()


def _loaded(frameworks: tuple[str, ...] = FRAMEWORKS) -> str:
    return f"print(sorted(m for m in sys.modules if any(m == f or m.startswith(f + '.') for f in {frameworks!r})))\n"


@pytest.mark.parametrize("args", [["--help"], ["tools"]])
def test_cog_start_up_imports_no_framework(tmp_path: Path, args: list[str]) -> None:
    argv = [*args, "-C", str(tmp_path)] if args == ["tools"] else args
    code = (
        "import sys\n"
        "from cogcli.cli import app\n"
        "try:\n"
        f"    app({argv!r}, prog_name='cog')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        "print('ADAPTERS', sorted(m for m in sys.modules if m.startswith('cogcli.adapters')))\n"
        + _loaded()
    )
    lines = _run(code, tmp_path)
    assert lines[-2:] == ["ADAPTERS []", "[]"]


def test_adapter_modules_import_their_framework_only_when_used(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "import cogcli, cogcli.adapters, cogcli.adapters.pydantic_ai, cogcli.adapters.openai_agents, cogcli.adapters.realtime\n"
        + _loaded()
        + "from cogcli.adapters.realtime import OpenAIRealtimeTools, GeminiLiveTools\n"
        "from workspace_tools import workspace_tools\n"
        "OpenAIRealtimeTools(workspace_tools('.')).session_update(); GeminiLiveTools(workspace_tools('.')).tools_config()\n"
        + _loaded()  # the realtime adapters build plain events: no SDK
        + "from cogcli.adapters.pydantic_ai import to_pydantic_ai_tools\n"
        "to_pydantic_ai_tools(workspace_tools('.'))\n"
        + _loaded(("pydantic_ai", "agents"))
    )
    lines = _run(code, tmp_path)
    assert lines[0] == "[]" and lines[1] == "[]"
    assert "pydantic_ai" in eval(lines[2]) and not any(m.startswith("agents") for m in eval(lines[2]))


@pytest.mark.parametrize(
    ("module", "call", "framework", "extra"),
    [
        ("cogcli.adapters.pydantic_ai", "to_pydantic_ai_tools", "pydantic_ai", "pydantic-ai"),
        ("cogcli.adapters.openai_agents", "to_function_tools", "agents", "openai-agents"),
    ],
)
def test_a_missing_framework_names_the_extra_to_install(tmp_path: Path, module: str, call: str, framework: str, extra: str) -> None:
    code = (
        "import sys\n"
        f"sys.modules[{framework!r}] = None  # as if it were not installed\n"
        f"from {module} import {call}\n"
        "from cogcli.adapters.shared import MissingExtra\n"
        "from workspace_tools import workspace_tools\n"
        "try:\n"
        f"    {call}(workspace_tools('.'))\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, isinstance(exc, MissingExtra))\n"
        "    print(exc)\n"
    )
    lines = _run(code, tmp_path)
    assert lines[0] == "MissingExtra True"
    assert lines[1].endswith(f"install it with: pip install 'cogcli[{extra}]'")
    assert repr(framework) in lines[1]
