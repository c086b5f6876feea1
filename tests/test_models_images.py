"""Images reach vision models (issue 48, part 6): a run whose ``read_file`` reads a PNG sends the
image to loopback servers speaking each provider's real stream, and the request bodies validate as
the official SDKs' own request types — Anthropic: an ``image`` block in the ``tool_result``;
Chat Completions: the call's ``tool`` message, then one ``user`` message naming the call with an
``image_url`` data URL. A thread continued reads the image again from memory; a model without vision
reads a text in its place; the person's attached image goes with the instruction."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from model_servers import AnthropicServer, OpenAIServer, Reply, ToolCall
from PIL import Image
from pydantic import TypeAdapter

from cogcli.loop.runtime import Agent, Cogitator
from cogcli.models import get_model
from cogcli.models.sse import RetryPolicy
from cogcli.threads.store import ThreadStore
from conftest import init_git_repo
from workspace_tools import workspace_tools
from workspace_tools.files.image import prepare_image

anthropic_params = pytest.importorskip("anthropic.types.message_create_params")
openai_params = pytest.importorskip("openai.types.chat.completion_create_params")

pytestmark = pytest.mark.anyio

KEYS = {"openai": "sk-test-0123456789", "anthropic": "sk-ant-test-0123456789"}


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def png(size: tuple[int, int] = (40, 30)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 40, 10)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "README.md").write_text("A red square.\n")
    (root / "shot.png").write_bytes(png())
    return init_git_repo(root)


def agent(repo: Path, provider: str, server: Any, model: str, vision: str | None = None) -> Agent:
    made = get_model(f"{provider}:{model}", base_url=server.base_url, api_key=KEYS[provider], retry=RetryPolicy(retries=0), vision=vision)
    return Agent(name="cog", instructions="You are cog.", model=made, tools=workspace_tools(repo))


READS = Reply("Looking.", [ToolCall("c1", "read_file", {"path": "shot.png"}), ToolCall("c2", "read_file", {"path": "README.md"})])
DATA_URL = "data:image/png;base64,"


def openai_body(body: dict[str, Any]) -> dict[str, Any]:
    TypeAdapter(openai_params.CompletionCreateParamsStreaming).validate_python(body)
    return body


def anthropic_body(body: dict[str, Any]) -> dict[str, Any]:
    TypeAdapter(anthropic_params.MessageCreateParamsStreaming).validate_python(body)
    return body


async def test_chat_completions_gets_the_image_after_the_turns_tool_messages_and_again_from_the_thread(repo: Path) -> None:
    data = base64.b64encode((repo / "shot.png").read_bytes()).decode()
    cog = Cogitator(ThreadStore(":memory:"))
    with OpenAIServer([READS, Reply("A red square."), Reply("Still red.")]) as srv:
        first = await cog.run(agent(repo, "openai", srv, "gpt-4o"), input="What is in shot.png?")
        second = await cog.run(agent(repo, "openai", srv, "gpt-4o"), input="And now?", thread_id=first.thread_id)
    assert first.status == second.status == "completed"
    after_reads = openai_body(srv.requests[1].body)["messages"]
    assert [m["role"] for m in after_reads] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert after_reads[3] == {"role": "tool", "tool_call_id": "c1", "content": "shot.png: PNG image, 40×30 pixels, " + after_reads[3]["content"].rsplit(", ", 1)[1]}
    label, image = after_reads[5]["content"]
    assert label == {"type": "text", "text": "The image shot.png that the read_file call c1 returned:"}
    assert image == {"type": "image_url", "image_url": {"url": DATA_URL + data}}
    continued = openai_body(srv.requests[2].body)["messages"]
    assert continued[5] == after_reads[5] and continued[-1] == {"role": "user", "content": "And now?"}


async def test_anthropic_gets_an_image_block_in_the_tool_result(repo: Path) -> None:
    data = base64.b64encode((repo / "shot.png").read_bytes()).decode()
    with AnthropicServer([READS, Reply("A red square.")]) as srv:
        result = await Cogitator().run(agent(repo, "anthropic", srv, "claude-sonnet-4-5"), input="What is in shot.png?")
    assert result.status == "completed"
    messages = anthropic_body(srv.requests[1].body)["messages"]
    shot, readme = messages[-1]["content"]
    assert shot["type"] == "tool_result" and shot["tool_use_id"] == "c1"
    text, image = shot["content"]
    assert text["type"] == "text" and text["text"].startswith("shot.png: PNG image, 40×30 pixels")
    assert image == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    assert readme["content"] == "     1\tA red square.\n"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_model_without_vision_reads_a_text_instead(repo: Path, provider: str) -> None:
    server = OpenAIServer([READS, Reply("I cannot see it.")]) if provider == "openai" else AnthropicServer([READS, Reply("I cannot see it.")])
    with server as srv:
        model = "gpt-3.5-turbo" if provider == "openai" else "claude-sonnet-4-5"
        result = await Cogitator().run(agent(repo, provider, srv, model, vision="off" if provider == "anthropic" else None), input="Look")
    assert result.status == "completed"
    body = srv.requests[1].body
    (openai_body if provider == "openai" else anthropic_body)(body)
    sent = str(body)
    assert "image_url" not in sent and "'type': 'image'" not in sent and DATA_URL not in sent
    assert "[image shot.png (image/png, 40×30) not shown: this model cannot see images" in sent


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_the_persons_image_goes_with_the_instruction(repo: Path, provider: str) -> None:
    part = prepare_image(png((64, 48)), "mock.png").part
    server = OpenAIServer([Reply("A mockup.")]) if provider == "openai" else AnthropicServer([Reply("A mockup.")])
    with server as srv:
        model = "gpt-4.1" if provider == "openai" else "claude-opus-4-1"
        result = await Cogitator().run(agent(repo, provider, srv, model), input="Build this page", images=[part])
    assert result.status == "completed"
    if provider == "openai":
        user = openai_body(srv.requests[0].body)["messages"][-1]
        assert user["content"] == [{"type": "text", "text": "Build this page"}, {"type": "image_url", "image_url": {"url": part.data_url()}}]
    else:
        user = anthropic_body(srv.requests[0].body)["messages"][-1]
        image, text = user["content"][:2]
        assert image == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": part.data}}
        assert text["text"] == "Build this page"


async def test_the_responses_api_gets_input_image_in_the_calls_output_and_with_the_instruction(repo: Path) -> None:
    """OpenAI's Responses API (the default at api.openai.com): a call's image is an ``input_image`` in
    its ``function_call_output``; the person's is one in the user message. The loopback server checks
    every request body against the openai SDK's ``ResponseCreateParamsStreaming``."""
    from responses_server import ResponsesServer

    data = base64.b64encode((repo / "shot.png").read_bytes()).decode()
    part = prepare_image(png((64, 48)), "mock.png").part
    with ResponsesServer([READS, Reply("A red square.")]) as srv:
        made = get_model("openai:gpt-5", base_url=srv.base_url, api_key=KEYS["openai"], retry=RetryPolicy(retries=0), api="responses")
        result = await Cogitator().run(Agent(name="cog", instructions="You are cog.", model=made, tools=workspace_tools(repo)),
                                       input="What is in shot.png?", images=[part])
    assert result.status == "completed", result
    items = srv.requests[1].body["input"]
    user = items[0]
    assert user["content"] == [{"type": "input_text", "text": "What is in shot.png?"},
                               {"type": "input_image", "image_url": part.data_url(), "detail": "auto"}]
    outputs = {i["call_id"]: i["output"] for i in items if i.get("type") == "function_call_output"}
    text, image = outputs["c1"]
    assert text["type"] == "input_text" and text["text"].startswith("shot.png: PNG image, 40×30 pixels")
    assert image == {"type": "input_image", "image_url": DATA_URL + data, "detail": "auto"}
    assert isinstance(outputs["c2"], str)  # a call without an image keeps its plain text output
