"""``cog edit --image PATH``: the image goes with the instruction into the thread (the model sees
it); a file that is no image is refused before anything runs, naming the file and why."""

from __future__ import annotations

import io
import json
from pathlib import Path

from PIL import Image

from cli_helpers import run_cog
from conftest import init_git_repo


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "README.md").write_text("hello\n")
    buffer = io.BytesIO()
    Image.new("RGB", (30, 20), (10, 200, 10)).save(buffer, format="JPEG")
    (root / "mock.jpg").write_bytes(buffer.getvalue())
    return init_git_repo(root)


def _cassette(path: Path) -> Path:
    lines = [{"type": "cassette", "schemaVersion": 1, "model": "test:scripted"}, {"type": "turn", "text": "A green box."}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_edit_image_goes_with_the_instruction_into_the_thread(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    done = run_cog(["edit", "--json", "--model", f"replay:{_cassette(tmp_path / 'c.jsonl')}", "--image", "mock.jpg", "What is this?"], repo)
    assert done.returncode == 0, done.stderr
    thread = next(json.loads(line)["threadId"] for line in done.stdout.splitlines() if json.loads(line)["type"] == "start")
    from cogcli.threads.store import default_store

    with default_store(repo) as store:
        [user] = [e.entry for e in store.entries(thread) if e.entry.kind == "user"]
    assert [(i.media_type, i.width, i.height, i.name) for i in user.images or []] == [("image/jpeg", 30, 20, "mock.jpg")]


def test_edit_image_that_is_no_image_is_refused_before_the_run(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    cassette = _cassette(tmp_path / "c.jsonl")
    for given, why in (("README.md", "is not a PNG, JPEG, GIF or WebP image"), ("missing.png", "does not exist"), (".", "is not a file")):
        refused = run_cog(["edit", "--model", f"replay:{cassette}", "--image", given, "What is this?"], repo)
        assert refused.returncode == 2, refused.stdout
        assert why in refused.stderr and "Traceback" not in refused.stderr
