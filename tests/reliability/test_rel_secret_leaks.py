"""Issue 13 §1, end to end: the secrets the README lists never reach the loopback model, the JSON
lines, the thread store (the bytes of ``.cog/threads.db``) or MCP ``_meta``, over property-generated
files. Reproduced first: ``details`` were never redacted, so a tool that reported the environment
(a test printing ``os.environ``) put the raw key into the ``tool-result`` line and threads.db.

Tests marked xfail ("needs issue-14 redaction wiring") pass once the call to
:func:`cogcli.secrets.redactor.redact_update`/``redact_result`` moves into ``invoke_tool`` (progress updates
in a run, ``cog tool``); the functions themselves are tested in tests/test_secrets_policy.py."""

from __future__ import annotations

import base64
import io
import json
import os
import string
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from cli_helpers import run_cog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model_servers import OpenAIServer, Reply, ToolCall
from pydantic import BaseModel

from cogcli import ToolContext, tool, tool_output
from cogcli.threads.store import ThreadStore
from cogcli.models import get_model
from cogcli.render.jsonl import JsonlWriter
from cogcli.loop.runtime import Agent, Cogitator
from workspace_tools import workspace_tools

ENV_NAME = "COG_LEAKTEST_SERVICE_TOKEN"
ENV_VALUE = "Lk9$leak-test/value+42"
B62 = string.ascii_letters + string.digits
FILLER = st.text(alphabet=B62 + " _-.,;:()[]{}#=+*/'\"\n", max_size=200)
DELIMS = st.sampled_from([" ", "\n", "=", "'", '"', ": ", "(", ","])


def _token(prefix: str, alphabet: str, lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=lo, max_size=hi).map(lambda s: prefix + s)


SECRETS = st.one_of(
    _token("glpat-", B62 + "_-", 20, 26),
    _token("AKIA", string.ascii_uppercase + string.digits, 16, 16),
    _token("ghp_", B62, 36, 36),
    _token("AIza", B62 + "_-", 35, 35),
    _token("sk_live_", B62, 24, 32),
    _token("npm_", B62, 36, 36),
    _token("pypi-AgEIcHlwaS5vcmc", B62 + "_-", 50, 70),
    st.text(alphabet=B62, min_size=10, max_size=20).map(lambda p: f"https://me:{p}@example.com"),
    st.just(ENV_VALUE),
    st.just(base64.b64encode(ENV_VALUE.encode()).decode()),
    st.just(base64.b64encode(b"user:" + ENV_VALUE.encode()).decode()),
)


def _pgp(seed: int) -> tuple[str, list[str]]:
    import random

    rng = random.Random(seed)
    body = ["".join(rng.choices(B62 + "+/", k=64)) for _ in range(6)] + ["=" + "".join(rng.choices(B62, k=4))]
    return "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n" + "\n".join(body) + "\n-----END PGP PRIVATE KEY BLOCK-----\n", body


@st.composite
def files_with_secrets(draw: st.DrawFn) -> tuple[str, list[str]]:
    parts, secrets = [draw(FILLER)], []
    for _ in range(draw(st.integers(1, 4))):
        secret = draw(SECRETS)
        # a URL's password is a secret where it stands (the same characters elsewhere are just text)
        secrets.append(":" + secret.split("@")[0].split(":")[-1] + "@" if secret.startswith("https://") else secret)
        parts += [draw(DELIMS), secret, draw(DELIMS), draw(FILLER)]
    if draw(st.booleans()):
        key, body = _pgp(draw(st.integers(0, 1000)))
        parts.insert(draw(st.integers(0, len(parts))), "\n" + key)
        secrets += body
    return "".join(parts) + "\n", [s for s in secrets if s != ENV_VALUE] + [ENV_VALUE]


class EnvParams(BaseModel):
    pass


@tool(name="report_env", description="What a test that prints os.environ reports.", parameters=EnvParams)
def report_env(params: EnvParams, context: ToolContext) -> Any:
    context.update(content=f"{ENV_NAME}={os.environ[ENV_NAME]}")
    return tool_output("ok", details={"environ": {ENV_NAME: os.environ[ENV_NAME]}, "b64": base64.b64encode(os.environ[ENV_NAME].encode()).decode()})


@pytest.fixture(scope="module")
def env() -> Iterator[None]:
    previous = os.environ.get(ENV_NAME)
    os.environ[ENV_NAME] = ENV_VALUE
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(ENV_NAME, None)
        else:
            os.environ[ENV_NAME] = previous


@pytest.fixture(scope="module")
def workspace() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="cog-leaks-") as tmp:
        (Path(tmp) / "notes").mkdir()
        yield Path(tmp)


def _run(workspace: Path, server: OpenAIServer) -> tuple[str, bytes, str, Any]:
    """One run with the real JSON-lines writer and a real threads.db: (JSON lines, db bytes, what
    the model was sent, the result)."""
    db_path = workspace / ".cog" / "threads.db"
    if db_path.exists():
        db_path.unlink()
    out = io.BytesIO()
    writer = JsonlWriter(out, live=True)

    async def run() -> Any:
        model = get_model("openai:gpt-4o", base_url=server.base_url, api_key="sk-test")
        tools = [*workspace_tools(workspace, include_git=False, sandbox="off"), report_env]
        store = ThreadStore(db_path, workspace=workspace)
        try:
            return await Cogitator(store).run(Agent(name="t", instructions="x", model=model, tools=tools), input="Look.", on_event=writer.handle)
        finally:
            store.close()
            await model.aclose()

    result = anyio.run(run)
    writer.close()
    sent = json.dumps([r.body for r in server.requests])
    return out.getvalue().decode(), db_path.read_bytes() + b"".join(p.read_bytes() for p in db_path.parent.glob("threads.db-*")), sent, result


def _script() -> list[Reply]:
    return [
        Reply("", [ToolCall("r1", "read_file", {"path": "notes/config.txt"}), ToolCall("s1", "search_text", {"pattern": "."}),
                   ToolCall("e1", "report_env", {})]),
        Reply("Done."),
    ]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sample=files_with_secrets())
def test_property_secrets_reach_neither_the_model_nor_result_lines_nor_the_thread_store(env: None, workspace: Path, sample: tuple[str, list[str]]) -> None:
    text, secrets = sample
    (workspace / "notes" / "config.txt").write_text(text)
    with OpenAIServer(_script()) as server:
        lines, db, sent, result = _run(workspace, server)
    assert result.status == "completed"
    results = "\n".join(line for line in lines.splitlines() if '"type":"tool-result"' in line)
    for where, seen in (("model", sent), ("tool-result lines", results), ("threads.db", db.decode("latin-1"))):
        leaked = [s for s in secrets if s in seen or json.dumps(s)[1:-1] in seen]
        assert not leaked, (where, leaked)


def test_progress_updates_in_a_run_are_redacted(env: None, workspace: Path) -> None:
    (workspace / "notes" / "config.txt").write_text("nothing\n")
    with OpenAIServer(_script()) as server:
        lines, _, _, _ = _run(workspace, server)
    updates = [line for line in lines.splitlines() if '"type":"tool-update"' in line]
    assert updates and not any(ENV_VALUE in u for u in updates)


def test_cog_tool_json_redacts_what_it_prints(tmp_path: Path) -> None:
    token = "glpat-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm"
    (tmp_path / "notes.txt").write_text(f"token: {token}\n")
    done = run_cog(["tool", "-C", ".", "--json", "search_text", "pattern=token"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert token not in done.stdout
