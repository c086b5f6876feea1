"""Give an OpenAI Agents SDK agent cog's workspace tools: the model gets the content only,
on_result gets the whole result (details, presentation, error code).

Run: python examples/openai_agents_tools.py      (needs: pip install 'cogcli[openai-agents]')
Offline: a scripted Model plays the LLM; leave out model= to use OpenAI's default model.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
from agents import Agent, RunConfig, Runner
from agents.items import ModelResponse, ToolCallOutputItem
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from cogcli import ToolResult
from cogcli.adapters.openai_agents import to_function_tools

FIX = {"path": "hello.py", "old_text": '"Hello " + name', "new_text": 'f"Hello, {name}!"'}


class ScriptedModel(Model):
    """Calls edit_file, then answers."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        if not any(isinstance(item, dict) and item.get("type") == "function_call_output" for item in input):
            output: list[Any] = [
                ResponseFunctionToolCall(type="function_call", call_id="call-1", name="edit_file", arguments=json.dumps(FIX))
            ]
        else:
            text = ResponseOutputText(type="output_text", text="greet() now says Hello, NAME!", annotations=[])
            output = [ResponseOutputMessage(type="message", id="msg-1", role="assistant", status="completed", content=[text])]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def on_result(result: ToolResult) -> None:  # the application's view of each call
    shown = result.presentation
    print(f"{shown.label} · {shown.detail}" if shown else result.name)
    print("  details:", repr(result.details))


async def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        Path(root, "hello.py").write_text('def greet(name):\n    return "Hello " + name\n')
        agent = Agent(name="coder", model=ScriptedModel(), tools=to_function_tools(root, on_result=on_result))
        run = await Runner.run(agent, "Make greet() say Hello, NAME!", run_config=RunConfig(tracing_disabled=True))

        for item in run.new_items:
            if isinstance(item, ToolCallOutputItem):
                print("model read:", repr(item.output))
        print(run.final_output)


if __name__ == "__main__":
    anyio.run(main)
