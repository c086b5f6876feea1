"""Credentials never reach a model (issue 9 §3): cogcli.secrets.redactor.redact finds each kind, the run
loop redacts every tool's result before the model, the event and the thread see it, and — the
property — secrets put at random places in generated files never reach a model request, checked
at the loopback OpenAI server during real runs that read and search those files."""

from __future__ import annotations

import json
import os
import string
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model_servers import OpenAIServer, Reply, ToolCall

from cogcli import tool, tool_output
from cogcli.wire.events import BaseEvent
from cogcli.threads.store import ThreadStore, ToolResultEntry
from cogcli.models import get_model
from cogcli.loop.runtime import Agent, Cogitator
from cogcli.secrets.redactor import REDACTED, redact, redact_value
from cogcli.contract.tool import NoParameters
from secrets_helpers import ENV_NAME, ENV_VALUE, pem_key
from workspace_tools import workspace_tools

AWS = "AKIAIOSFODNN7EXAMPLE"
OPENAI = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
ANTHROPIC = "sk-ant-api03-" + "x" * 40 + "-AbC12_dEf"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GITHUB_PAT = "github_pat_11ABCDEFG0" + "abcdefghijklmnop_qrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
SLACK = "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp"


@pytest.mark.parametrize("secret", [AWS, OPENAI, ANTHROPIC, GITHUB, GITHUB_PAT, SLACK])
def test_each_token_kind_is_redacted_where_it_stands(secret: str) -> None:
    for text in (secret, f"key = '{secret}'\n", f"export TOKEN={secret}; echo", f"[{secret}]", f"x\n{secret}\ny"):
        out, n = redact(text, environ={})
        assert secret not in out and n == 1 and REDACTED in out, text
        assert out == text.replace(secret, REDACTED)


@pytest.mark.parametrize(
    "text",
    ["task-queue-worker-thread-pool-size = 4", "disk-usage-report-generator-for-all-hosts", "AKIA is a prefix",
     "the ghp_ prefix", "xox-not-slack", "sk-short", "mask-sk-" + "a" * 10, "def risk_assessment_of_the_project(): pass"],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text, environ={}) == (text, 0)


def test_env_values_of_secret_variables_are_redacted_anywhere_short_ones_are_not() -> None:
    env = {"MY_SERVICE_API_KEY": "v@lue-with;punct", "GH_TOKEN": "tok12345", "DB_PASSWORD": "hunter2!x", "PIN_TOKEN": "1234", "HOME": "/home/someone/x"}
    text = "a=v@lue-with;punct,b=xtok12345x c='hunter2!x' pin=1234 home=/home/someone/x"
    out, n = redact(text, environ=env)
    assert n == 3
    assert out == f"a={REDACTED},b=x{REDACTED}x c='{REDACTED}' pin=1234 home=/home/someone/x"


def test_a_private_key_block_is_redacted_whole_and_cut_blocks_lose_their_key_lines() -> None:
    key = pem_key(12)
    body = [line for line in key.splitlines() if "-----" not in line]
    text = f"before\n{key}after\n"
    out, n = redact(text, environ={})
    assert n == 1 and out == f"before\n{REDACTED}\nafter\n"
    numbered = "".join(f"{i:>6}\t{line}\n" for i, line in enumerate(text.splitlines(), 1))
    lines = numbered.splitlines(keepends=True)
    for cut in (lines[:6], lines[5:], lines[:-3]):  # BEGIN without END, END without BEGIN, BEGIN cut short
        out, n = redact("".join(cut), environ={})
        assert n == 1 and not any(b in out for b in body), out


def test_redact_value_walks_json_content_and_keeps_clean_values_identical() -> None:
    clean = {"path": "a.py", "lines": [1, 2], "ok": True}
    assert redact_value(clean, environ={}) == (clean, 0)
    dirty = {"files": [{"text": f"k={AWS}"}], AWS: 1}
    out, n = redact_value(dirty, environ={})
    assert n == 2 and AWS not in json.dumps(out)


def test_a_megabyte_of_text_is_scanned_in_one_pass() -> None:
    text = ("def f(x):\n    return x + 1  # nothing secret here\n" * 25_000) + f"\nkey={AWS}\n"
    out, n = redact(text, environ={})
    assert n == 1 and out.endswith(f"key={REDACTED}\n") and len(out) == len(text) - len(AWS) + len(REDACTED)


# --- AWS secret keys in every spelling, crates.io tokens (issue 23.3) ------------------------

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
CRATES = "cio" + "tgp8BGZBlX192iExSQPm0SrUlBunG8zd"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"[default]\naws_secret_access_key = {AWS_SECRET}\n", "aws_secret_access_key = "),  # ~/.aws/credentials
        (f'{{"Credentials": {{"AccessKeyId": "ASIA…", "SecretAccessKey": "{AWS_SECRET}"}}}}', '"SecretAccessKey": "'),  # aws sts
        (f"Aws_Secret_Access_Key: {AWS_SECRET}\n", "Aws_Secret_Access_Key: "),
        (f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}", "AWS_SECRET_ACCESS_KEY="),
        (f"secret_access_key={AWS_SECRET}", "secret_access_key="),
        (f"SECRET_ACCESS_KEY='{AWS_SECRET}'", "SECRET_ACCESS_KEY='"),
        (f"Secret-Access-Key: {AWS_SECRET}", "Secret-Access-Key: "),
        (f"const creds = {{ secretAccessKey: '{AWS_SECRET}' }}", "secretAccessKey: '"),
        (f"  :secret_access_key => \"{AWS_SECRET}\",", ":secret_access_key => \""),
        (f"cargo login {CRATES}", "cargo login "),
        (f'[registry]\ntoken = "{CRATES}"\n', 'token = "'),
        (f"CARGO_REGISTRY_TOKEN={CRATES}", "CARGO_REGISTRY_TOKEN="),
    ],
)
def test_aws_secret_keys_in_every_spelling_and_crates_io_tokens_are_redacted(text: str, kept: str) -> None:
    out, n = redact(text, environ={})
    assert AWS_SECRET not in out and CRATES not in out and n == 1, out
    assert kept + REDACTED in out  # the name stays: a reader sees which value was taken out


@pytest.mark.parametrize(
    "text",
    [
        "secret_access_key = os.environ['AWS_SECRET_ACCESS_KEY']",
        "secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY,",
        "aws_secret_access_key = None  # read from the profile",
        "SecretAccessKey: !Ref SecretAccessKeyParameterForTheDeploymentRole",
        "secret_access_key = " + "x" * 39,  # one short of a key
        "secret_access_key = " + "x" * 41,  # one too many
        "the precision" + "a" * 32 + " and ciopa" + "b" * 31,  # cio inside a word, or one short
        "cio" + "a" * 33,  # too long for a crates.io token
    ],
)
def test_names_without_a_key_shaped_value_and_cio_inside_words_are_left_alone(text: str) -> None:
    assert redact(text, environ={}) == (text, 0)


_B64 = string.ascii_letters + string.digits + "/+"


@st.composite
def aws_secret_lines(draw: st.DrawFn) -> tuple[str, str]:
    """A line that sets an AWS secret key: any spelling of the name (with or without ``aws``, each
    word lower/Title/UPPER, any separator), any assignment style, quoted or not."""
    words = ["secret", "access", "key"]
    if draw(st.booleans()):
        words.insert(0, "aws")
    case = st.sampled_from([str.lower, str.title, str.upper])
    shaped = [draw(case)(w) for w in words]
    sep = draw(st.sampled_from(["_", "-", ".", ""]))
    name = sep.join(shaped)
    value = draw(st.text(alphabet=_B64, min_size=40, max_size=40))
    quote = draw(st.sampled_from(["", '"', "'"]))
    style = draw(st.sampled_from(["{n} = {q}{v}{q}", "{n}={q}{v}{q}", "{n}: {q}{v}{q}", '"{n}": "{v}"', "{n} => {q}{v}{q}", "'{n}':{q}{v}{q}"]))
    return style.format(n=name, v=value, q=quote), value


@settings(max_examples=200, deadline=None)
@given(line=aws_secret_lines(), before=st.text(alphabet=string.ascii_letters + " #;,()", max_size=60), after=st.sampled_from(["", "\n", ",", " }", "\nnext = 1\n"]))
def test_property_an_aws_secret_key_is_redacted_whatever_the_spelling(line: tuple[str, str], before: str, after: str) -> None:
    text, value = line
    out, n = redact(f"{before}\n{text}{after}", environ={})
    assert value not in out and n >= 1, out


@settings(max_examples=200, deadline=None)
@given(
    body=st.text(alphabet=string.ascii_letters + string.digits, min_size=32, max_size=32),
    trusted=st.booleans(),
    left=st.sampled_from([" ", "=", '"', "'", "\n", "(", ":", "token = \"", "Bearer "]),  # a token starts a word
    right=st.sampled_from([" ", '"', "'", "\n", ")", ",", ";"]),
    filler=st.text(alphabet=string.ascii_letters + " .,;:()#=\n", max_size=80),
)
def test_property_a_crates_io_token_is_redacted_where_it_stands(body: str, trusted: bool, left: str, right: str, filler: str) -> None:
    token = ("cio_tp_" if trusted else "cio") + body
    out, n = redact(f"{filler}{left}{token}{right}{filler}", environ={})
    assert token not in out and n >= 1, out


def test_the_new_formats_find_nothing_in_ordinary_source() -> None:
    """The false-positive budget: Python's standard library (13 MB of ordinary source, tests left
    out: they hold sample keys) and cog's own code come out of redaction as they went in."""
    import sysconfig

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in stdlib.rglob("*.py") if not {"test", "tests", "site-packages", "idlelib"} & set(p.parts)]
    ours = Path(__file__).resolve().parents[1]
    files += [*ours.joinpath("cogcli").rglob("*.py"), *ours.joinpath("workspace_tools").rglob("*.py")]
    files.remove(ours / "cogcli" / "secrets" / "redactor.py")  # it shows each format it finds
    assert len(files) > 500
    found: dict[str, int] = {}
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        _, n = redact(text, environ={})
        if n:
            found[str(path)] = n
    assert found == {}


# --- the run loop -------------------------------------------------------------------------


@tool()
async def fetch_config(params: NoParameters) -> Any:
    """Return a config that holds a key (as an MCP tool or any other tool might)."""
    return tool_output({"config": f"aws_key = {AWS}", "note": "fine"}, details={"raw": AWS})


@tool()
async def failing(params: NoParameters) -> Any:
    """Fail with a message that holds a key."""
    from cogcli.contract.errors import ToolCallError

    raise ToolCallError(f"could not log in with {GITHUB}")


@pytest.mark.anyio
async def test_the_run_redacts_every_tools_result_for_the_model_the_event_and_the_thread() -> None:
    with OpenAIServer(
        [Reply("", [ToolCall("c1", "fetch_config", {}), ToolCall("c2", "failing", {})]), Reply("done")]
    ) as server:
        model = get_model("openai:gpt-4o", base_url=server.base_url, api_key="sk-test")
        store = ThreadStore(":memory:")
        events: list[BaseEvent] = []
        agent = Agent(name="t", instructions="x", model=model, tools=[fetch_config, failing])
        try:
            result = await Cogitator(store).run(agent, input=f"use the key from my notes (mine: {SLACK})", on_event=events.append)
        finally:
            await model.aclose()
        sent = json.dumps([r.body for r in server.requests])
    assert result.status == "completed"
    assert AWS not in sent and GITHUB not in sent and sent.count(REDACTED) == 2
    assert SLACK in sent  # the person's own instruction is sent as typed

    results = [e for e in events if e.type == "tool-result"]  # type: ignore[attr-defined]
    # details too (issue 13): they reach the JSON lines, the thread store and MCP _meta
    assert [(r.redacted, AWS in json.dumps(r.result), r.details) for r in results[:1]] == [(2, False, {"raw": REDACTED})]
    assert results[1].redacted == 1 and GITHUB not in results[1].error and results[1].to_wire()["redacted"] == 1
    stored = [s.entry for s in store.entries(result.thread_id) if isinstance(s.entry, ToolResultEntry)]
    assert all(GITHUB not in e.tool_results[0].content and AWS not in e.tool_results[0].content for e in stored)
    assert AWS not in json.dumps(stored[0].metadata.content) and stored[0].metadata.redacted == 2
    assert AWS not in json.dumps(stored[0].metadata.details)
    assert [e.redacted for e in store.thread_events(result.thread_id) if e.type == "tool-result"] == [2, 1]  # type: ignore[attr-defined]


# --- the property: generated files, real runs, checked at the server ----------------------

FILLER = st.text(alphabet=string.ascii_letters + string.digits + " _-.,;:()[]{}#=+*/'\"", max_size=400)
DELIMS = st.sampled_from([" ", "\n", "=", "'", '"', ":", "(", ",", "\t", "= "])
B62 = string.ascii_letters + string.digits


def _token(prefix: str, alphabet: str, lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=lo, max_size=hi).map(lambda s: prefix + s)


SECRETS = st.one_of(
    _token("AKIA", string.ascii_uppercase + string.digits, 16, 16),
    _token("ASIA", string.ascii_uppercase + string.digits, 16, 16),
    st.sampled_from(["sk-", "sk-proj-", "sk-ant-api03-"]).flatmap(lambda p: _token(p, B62 + "_-", 20, 90)),
    st.sampled_from(["ghp_", "gho_", "ghs_"]).flatmap(lambda p: _token(p, B62, 36, 36)),
    _token("github_pat_", B62 + "_", 22, 82),
    st.sampled_from(["xoxb-", "xoxp-", "xoxa-"]).flatmap(lambda p: _token(p, B62 + "-", 10, 50)),
    st.just(ENV_VALUE),
)


@st.composite
def files_with_secrets(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A text file of random lines with secrets at random places (each between delimiters, as
    a token in code or config is), and the secrets it holds (each key line of a PEM key counted)."""
    parts: list[str] = [draw(FILLER)]
    secrets: list[str] = []
    for _ in range(draw(st.integers(1, 5))):
        secret = draw(SECRETS)
        secrets.append(secret)
        parts += [draw(DELIMS), secret, draw(DELIMS), draw(FILLER)]
    if draw(st.booleans()):
        key = pem_key(draw(st.integers(2, 8)), seed=draw(st.integers(0, 10_000)))
        secrets += [line for line in key.splitlines() if "-----" not in line]
        at = draw(st.integers(0, len(parts)))
        parts.insert(at, "\n" + key)
    return "".join(parts) + "\n", secrets


@pytest.fixture(scope="module")
def workspace() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="cog-secrets-") as tmp:
        (Path(tmp) / "notes").mkdir()
        yield Path(tmp)


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    previous = os.environ.get(ENV_NAME)
    os.environ[ENV_NAME] = ENV_VALUE
    try:
        with OpenAIServer() as srv:
            yield srv
    finally:
        if previous is None:
            os.environ.pop(ENV_NAME, None)
        else:
            os.environ[ENV_NAME] = previous


def _model_text(body: Any) -> str:
    """Everything of a Chat Completions request a model reads: each message's text and calls."""
    parts = []
    for message in body.get("messages", []):
        content = message.get("content")
        parts.append(content if isinstance(content, str) else json.dumps(content))
        parts += [c["function"]["arguments"] for c in message.get("tool_calls") or []]
    return "\n".join(parts)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sample=files_with_secrets(), limit=st.one_of(st.none(), st.integers(1, 6)), offset=st.integers(1, 40))
def test_secrets_in_files_never_reach_a_model_request(
    workspace: Path, server: OpenAIServer, sample: tuple[str, list[str]], limit: int | None, offset: int
) -> None:
    text, secrets = sample
    (workspace / "notes" / "config.txt").write_text(text, encoding="utf-8")
    offset = 1 + (offset - 1) % text.count("\n")  # a line of the file (ranges may start inside a key)
    ranged = {"path": "notes/config.txt", "offset": offset, "limit": limit} if limit else {"path": "notes/config.txt"}
    server.requests.clear()
    server.add(
        Reply("Reading.", [ToolCall("r1", "read_file", {"path": "notes/config.txt"}), ToolCall("r2", "read_file", ranged)]),
        Reply("Searching.", [ToolCall("s1", "search_text", {"pattern": "."}), ToolCall("s2", "search_text", {"pattern": "[A-Za-z0-9]{8}", "path": "notes"})]),
        Reply("Done."),
    )

    async def run() -> Any:
        model = get_model("openai:gpt-4o", base_url=server.base_url, api_key="sk-test")
        agent = Agent(name="t", instructions="read the notes", model=model, tools=workspace_tools(workspace, include_git=False, sandbox="off"))
        try:
            return await Cogitator().run(agent, input="What is in the notes?")
        finally:
            await model.aclose()

    result = anyio.run(run)
    assert result.status == "completed", result.error
    assert [c.name for c in result.tool_calls] == ["read_file", "read_file", "search_text", "search_text"]
    assert all(c.ok for c in result.tool_calls), [c.error for c in result.tool_calls]
    assert len(server.requests) == 3
    seen = "\n".join(_model_text(r.body) for r in server.requests)
    leaked = [s for s in secrets if s in seen]
    assert not leaked, leaked
    assert result.tool_calls[0].redacted >= 1
