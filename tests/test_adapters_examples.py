"""The adapter examples (notes/adapters.md, "Use cog's tools in your own agent") run offline and
print what the text says: the model reads content, the application gets details and presentation."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from cli_helpers import cog_env
from conftest import ROOT

DIFF = 'diff --git a/hello.py b/hello.py\\n--- a/hello.py\\n+++ b/hello.py\\n@@ -1,2 +1,2 @@\\n def greet(name):\\n-    return "Hello " + name\\n+    return f"Hello, {name}!"\\n'
EDIT_DETAILS = "{'diff': '" + DIFF + "', 'added': 1, 'removed': 1, 'match': 'exact'}"

EXPECTED = {
    "pydantic_ai_tools.py": [
        "Read file · hello.py",
        """  model read: '     1\\tdef greet(name):\\n     2\\t    return "Hello " + name\\n'""",
        "  details:    {'path': 'hello.py', 'start_line': 1, 'end_line': 2, 'total_lines': 2, 'truncated': False}",
        "Edit file · hello.py",
        """  model read: '{"path": "hello.py", "replacements": 1}'""",
        "  details:    " + EDIT_DETAILS,
        "greet() now says Hello, NAME!",
    ],
    "openai_agents_tools.py": [
        "Edit file · hello.py",
        "  details: " + EDIT_DETAILS,
        """model read: '{"path": "hello.py", "replacements": 1}'""",
        "greet() now says Hello, NAME!",
    ],
    "realtime_tools.py": [
        "session.update offers: read_file, list_files, search_text, edit_file, apply_patch, write_file, move_file, delete_file, git_status, git_diff, run_tests, run_command, command_output, kill_command, diagnostics",
        "  [Read file · notes.md] details: {'path': 'notes.md', 'start_line': 1, 'end_line': 1, 'total_lines': 1, 'truncated': False}",
        'send: {"type": "conversation.item.create", "item": {"type": "function_call_output", "call_id": "call-1", "output": "     1\\tStandup at 10.\\n"}}',
        'send: {"type": "response.create"}',
        "declared: 15 functions",
        "  [Read file · missing.md] error_code: FILE_NOT_FOUND",
        'send_tool_response: {"function_responses": [{"id": "fc-1", "name": "read_file", "response": {"error": "missing.md does not exist; list_files shows the files there are"}}]}',
    ],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_adapter_example_runs_offline(name: str) -> None:
    env = {**cog_env(), "OPENAI_API_KEY": "", "OPENAI_AGENTS_DISABLE_TRACING": "1"}
    out = subprocess.run([sys.executable, str(ROOT / "examples" / name)], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert [_without_checks(line) for line in out.stdout.splitlines()] == EXPECTED[name]


def _without_checks(line: str) -> str:
    """A line with an edit's diagnostics verdict left out: which checkers ran, where and how long
    depends on the machine (tests/test_diagnostics.py checks the verdicts)."""
    return re.sub(r", 'diagnostics': \{.*\}\}$", "}", line)
