"""cog's workspace tools in a voice session (OpenAI Realtime, Gemini Live): the model hears the
content only; details and presentation go to your on_result callback.

Run: python examples/realtime_tools.py
Offline: the server events are written out here; in a real session they come from the websocket
(openai: `async for event in connection`; google-genai: `async for message in session.receive()`).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import anyio

from cogcli import ToolResult
from cogcli.adapters.realtime import RESPONSE_CREATE, GeminiLiveTools, OpenAIRealtimeTools


def on_result(result: ToolResult) -> None:  # what a UI draws for the call
    shown = f"{result.presentation.label} · {result.presentation.detail}" if result.presentation else result.name
    print(f"  [{shown}]", f"details: {result.details}" if result.ok else f"error_code: {result.error_code}")


async def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        Path(root, "notes.md").write_text("Standup at 10.\n")

        # OpenAI Realtime: offer the tools, answer response.function_call_arguments.done
        openai_tools = OpenAIRealtimeTools(root, on_result=on_result)
        update = openai_tools.session_update(instructions="You help with the repo.")
        print("session.update offers:", ", ".join(tool["name"] for tool in update["session"]["tools"]))
        event = {
            "type": "response.function_call_arguments.done", "event_id": "ev-1", "response_id": "resp-1",
            "item_id": "item-1", "output_index": 0, "call_id": "call-1", "name": "read_file",
            "arguments": json.dumps({"path": "notes.md"}),
        }
        reply = await openai_tools.handle(event)
        print("send:", json.dumps(reply))
        print("send:", json.dumps(RESPONSE_CREATE))

        # Gemini Live: declare the functions, answer a tool_call with a tool_response
        gemini_tools = GeminiLiveTools(root, on_result=on_result)
        config = {"response_modalities": ["AUDIO"], "tools": gemini_tools.tools_config()}
        print("declared:", len(config["tools"][0]["function_declarations"]), "functions")
        tool_call = {"function_calls": [{"id": "fc-1", "name": "read_file", "args": {"path": "missing.md"}}]}
        print("send_tool_response:", json.dumps(await gemini_tools.handle(tool_call)))


if __name__ == "__main__":
    anyio.run(main)
