"""Define a tool whose result is split by reader, then call it through invoke_tool().

Run: python examples/define_a_tool.py
"""

from __future__ import annotations

import anyio
from pydantic import BaseModel, Field

from cogcli import ToolContext, ToolUpdate, invoke_tool, tool, tool_output


class CountParams(BaseModel):
    text: str = Field(description="The text whose words are counted")


@tool(presentation=lambda p: {"label": "Count words", "icon": "hash", "detail": p.text[:20]})
async def count_words(params: CountParams, context: ToolContext):
    """Counts the words of a text."""
    words = params.text.split()
    for i, word in enumerate(words, 1):
        context.update(content=f"{i}/{len(words)}: {word}")  # for people watching only
    return tool_output(
        content={"words": len(words)},  # the model reads this
        details={"longest": max(words, key=len)},  # the application only
    )


async def main() -> None:
    def on_update(update: ToolUpdate) -> None:
        print(f"  [{update.tool_name} {update.call_id}] {update.content}")

    result = await invoke_tool(count_words, {"text": "split results by reader"}, call_id="call-1", on_update=on_update)
    print(f"{result.presentation.label}  {result.presentation.detail}")
    print("model reads:", result.model_text())
    print("details:", result.details)

    bad = await invoke_tool(count_words, {"txt": "typo"}, call_id="call-2")
    print(f"✗ {bad.error_code}: {bad.error.splitlines()[1]}")


if __name__ == "__main__":
    anyio.run(main)
