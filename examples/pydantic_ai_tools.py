"""Give a pydantic-ai agent cog's workspace tools: the model reads the content, the application
finds details and presentation in each ToolReturnPart's metadata.

Run: python examples/pydantic_ai_tools.py        (needs: pip install 'cogcli[pydantic-ai]')
Offline: a FunctionModel plays the LLM; put a real model ("openai:gpt-5", …) in its place.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from cogcli.adapters.pydantic_ai import to_pydantic_ai_toolset

FIX = {"path": "hello.py", "old_text": '"Hello " + name', "new_text": 'f"Hello, {name}!"'}


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    turn = len(messages) // 2
    if turn == 0:
        return ModelResponse(parts=[ToolCallPart("read_file", {"path": "hello.py"}, tool_call_id="call-1")])
    if turn == 1:
        return ModelResponse(parts=[ToolCallPart("edit_file", FIX, tool_call_id="call-2")])
    return ModelResponse(parts=[TextPart("greet() now says Hello, NAME!")])


async def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        Path(root, "hello.py").write_text('def greet(name):\n    return "Hello " + name\n')
        agent = Agent(FunctionModel(scripted_model), toolsets=[to_pydantic_ai_toolset(root)])
        result = await agent.run("Make greet() say Hello, NAME!")

        for message in result.all_messages():
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    shown = part.metadata["presentation"]  # for the step list
                    print(f"{shown['label']} · {shown['detail']}")
                    print("  model read:", repr(part.content))
                    print("  details:   ", repr(part.metadata["details"]))
        print(result.output)


if __name__ == "__main__":
    anyio.run(main)
