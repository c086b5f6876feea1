"""The HTTP model clients close a streamed response as soon as the turn is read, not when the
garbage collector gets to it: a proxy that keeps the response open after the provider's end
marker must not hold a connection (and the server's worker) for the rest of the run."""

from __future__ import annotations

import time

import anyio
import pytest
from model_servers import AnthropicServer, Linger, OpenAIServer, Reply

from cogcli.models import Message, TurnFinished, get_model
from cogcli.models.sse import RetryPolicy

HISTORY = [Message(role="system", content="You are cog."), Message(role="user", content="Hi")]


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


@pytest.mark.anyio
@pytest.mark.parametrize(("server_type", "spec"), [(OpenAIServer, "openai:gpt-test"), (AnthropicServer, "anthropic:claude-test")])
async def test_the_response_is_closed_when_the_turn_is_read(server_type: type, spec: str) -> None:
    with server_type([Linger(Reply("Hello there."))]) as srv:
        model = get_model(spec, base_url=srv.base_url, api_key="sk-test-close", retry=RetryPolicy(retries=0))
        stream = model.stream(HISTORY, [])
        async for event in stream:
            if isinstance(event, TurnFinished):
                break  # the client is still inside its stream: only an explicit close ends the response
        deadline = time.monotonic() + 5
        while srv.closed == 0 and time.monotonic() < deadline:
            await anyio.sleep(0.02)
        closed = srv.closed
        await stream.aclose()
        await model.aclose()
    assert closed == 1, "the response stayed open after the turn was read"
