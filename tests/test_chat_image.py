"""`cog chat`'s `/image PATH` on a real terminal: a broken file is refused with its reason, a real
image is attached and goes to the model with the next instruction only (`--vision on` is a chat
flag like every setting's)."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

from cli_helpers import repo_with
from model_servers import OpenAIServer, Reply
from test_chat import PROMPT, chat, leave, send, server_env


def test_image_is_attached_to_the_next_instruction_only(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.py": "x = 1\n", "fake.png": "\x89PNG but text\n"})
    buffer = io.BytesIO()
    Image.new("RGB", (24, 16), (0, 0, 255)).save(buffer, format="PNG")
    (repo / "mock.png").write_bytes(buffer.getvalue())
    with OpenAIServer([Reply("A blue box."), Reply("Nothing attached.")]) as server, chat(repo, server_env(server), "--vision", "on") as child:
        child.expect(PROMPT)
        send(child, "/image missing.png")
        child.expect("missing.png does not exist")
        child.expect(PROMPT)
        send(child, "/image fake.png")
        child.expect("fake.png cannot be attached: it is not a PNG, JPEG, GIF or WebP image")
        child.expect(PROMPT)
        send(child, "/image mock.png")
        child.expect(r"attached mock\.png · 24×16 · \d+ B: the model sees it with your next instruction")
        child.expect(PROMPT)
        send(child, "What is this?")
        child.expect("A blue box.")
        child.expect(PROMPT)
        send(child, "And now?")
        child.expect("Nothing attached.")
        child.expect(PROMPT)
        assert leave(child) == 0
    first = server.requests[0].body["messages"][-1]
    assert first["content"][0] == {"type": "text", "text": "What is this?"}
    assert first["content"][1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    assert server.requests[1].body["messages"][-1] == {"role": "user", "content": "And now?"}
