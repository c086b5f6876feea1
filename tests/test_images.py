"""Images (issue 48, part 6): recognised by their bytes, their size read from the headers by hand,
hostile ones refused clearly; ``read_file`` of an image gives the model the image, the application
its facts, the person ``a.png · 40×30 · 1 KB``; the thread keeps the bytes, events only the facts;
compaction counts an image by its pixels and drops an old one with its text."""

from __future__ import annotations

import base64
import io
import struct
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from cogcli import invoke_tool
from cogcli.compaction.estimate import estimate_message
from cogcli.compaction.stubs import drop_results
from cogcli.contract.output import ImageContent
from cogcli.models.base import Message, ToolCallRequest
from cogcli.models.vision import NO_VISION, sees_images, without_images
from cogcli.settings.options import VISION_CHOICES
from cogcli.threads.entries import ToolResultEntry
from cogcli.threads.history import build_history
from cogcli.threads.store import ThreadStore
from cogcli.models import vision
from cogcli.wire.events import ToolResultEvent
from conftest import init_git_repo
from workspace_tools import workspace_tools
from workspace_tools.files.image import MAX_EDGE, MAX_SENT_PIXELS, BadImage, image_info, prepare_image, sniff

pytestmark = pytest.mark.anyio

FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


def encoded(fmt: str, size: tuple[int, int] = (40, 30), mode: str = "RGB") -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, size, (200, 40, 10) if mode == "RGB" else 3).save(buffer, format=fmt)
    return buffer.getvalue()


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def hand_png(width: int, height: int) -> bytes:
    """A PNG whose header says ``width``×``height``, its chunks well formed (the pixels need not be)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00")) + chunk(b"IEND", b"")


def hand_gif(width: int, height: int) -> bytes:
    image = b"\x2c" + struct.pack("<HHHH", 0, 0, 1, 1) + b"\x00" + b"\x02" + b"\x02\x44\x01\x00"
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00" + image + b";"


def hand_webp_vp8x(width: int, height: int) -> bytes:
    body = b"\x00" * 4 + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    payload = b"WEBP" + b"VP8X" + struct.pack("<I", len(body)) + body
    return b"RIFF" + struct.pack("<I", len(payload)) + payload


def hand_webp_vp8l(width: int, height: int) -> bytes:
    body = b"\x2f" + ((width - 1) | (height - 1) << 14).to_bytes(4, "little") + b"\x00" * 5
    payload = b"WEBP" + b"VP8L" + struct.pack("<I", len(body)) + body
    return b"RIFF" + struct.pack("<I", len(payload)) + payload


def hand_jpeg(width: int, height: int) -> bytes:
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x01\x11\x00\x02\x11\x00\x03\x11\x00"
    return b"\xff\xd8" + sof + b"\xff\xda" + struct.pack(">H", 8) + b"\x01\x01\x00\x00\x3f\x00" + b"\x12\x34" + b"\xff\xd9"


# --- the headers, by hand -------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "mode"), [(f, m) for f in FORMATS for m in ("RGB", "P") if (f, m) != ("JPEG", "P")])  # JPEG has no palette
def test_what_pillow_writes_is_read_back_with_its_size(fmt: str, mode: str) -> None:
    info = image_info(encoded(fmt, (37, 23), mode))
    assert (info.media_type, info.width, info.height) == (FORMATS[fmt], 37, 23)


def test_animated_gif_and_webp_are_read_by_their_canvas() -> None:
    frames = [Image.new("P", (20, 10), i) for i in range(3)]
    for fmt, extra in (("GIF", {}), ("WEBP", {"lossless": True})):
        buffer = io.BytesIO()
        frames[0].save(buffer, format=fmt, save_all=True, append_images=frames[1:], **extra)
        assert (image_info(buffer.getvalue()).width, image_info(buffer.getvalue()).height) == (20, 10)


@given(st.integers(1, 0x7FFFFFFF), st.integers(1, 0x7FFFFFFF))
def test_a_png_header_gives_its_size(width: int, height: int) -> None:
    assert (image_info(hand_png(width, height)).width, image_info(hand_png(width, height)).height) == (width, height)


@given(st.integers(1, 0xFFFF), st.integers(1, 0xFFFF))
def test_jpeg_and_gif_headers_give_their_size(width: int, height: int) -> None:
    for data in (hand_jpeg(width, height), hand_gif(width, height)):
        info = image_info(data)
        assert (info.width, info.height) == (width, height)


@given(st.integers(1, 1 << 14), st.integers(1, 1 << 14), st.integers(1, 1 << 24), st.integers(1, 1 << 24))
def test_webp_headers_give_their_size(w_lossless: int, h_lossless: int, w_extended: int, h_extended: int) -> None:
    assert (image_info(hand_webp_vp8l(w_lossless, h_lossless)).width, image_info(hand_webp_vp8l(w_lossless, h_lossless)).height) == (w_lossless, h_lossless)
    assert (image_info(hand_webp_vp8x(w_extended, h_extended)).width, image_info(hand_webp_vp8x(w_extended, h_extended)).height) == (w_extended, h_extended)


MAGIC = [b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"RIFF\x00\x00\x00\x00WEBP"]


@given(st.sampled_from(MAGIC), st.binary(max_size=400))
@settings(max_examples=400)
def test_any_bytes_after_a_magic_number_are_an_image_or_a_clear_refusal(magic: bytes, rest: bytes) -> None:
    data = magic + rest
    try:
        info = image_info(data)
    except BadImage as exc:
        assert str(exc)  # says what is wrong
    else:
        assert info.width > 0 and info.height > 0 and info.media_type == sniff(data[:16])


@given(st.sampled_from(list(FORMATS)), st.data())
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=120)
def test_an_image_cut_anywhere_is_refused(fmt: str, data: st.DataObject) -> None:
    whole = encoded(fmt, (29, 17))
    cut = data.draw(st.integers(16, len(whole) - 1))
    with pytest.raises(BadImage):
        image_info(whole[:cut])


def test_malformed_headers_say_what_is_wrong() -> None:
    png = bytearray(hand_png(10, 10))
    png[20] ^= 0xFF  # a byte of IHDR: its checksum no longer holds
    with pytest.raises(BadImage, match="checksum of its b'IHDR' chunk"):
        image_info(bytes(png))
    with pytest.raises(BadImage, match="no frame header"):
        image_info(b"\xff\xd8\xff\xda\x00\x08" + b"\x00" * 6 + b"\xff\xd9")
    with pytest.raises(BadImage, match="0×"):
        image_info(hand_png(0, 10))
    with pytest.raises(BadImage, match="not a PNG, JPEG, GIF or WebP"):
        image_info(b"hello, world, this is text")


# --- preparing one for a model ----------------------------------------------------------------------


def test_an_image_that_fits_is_sent_byte_for_byte() -> None:
    data = encoded("PNG")
    image = prepare_image(data, "a.png")
    assert base64.b64decode(image.part.data) == data and image.part.size == len(data) and not image.downscaled
    assert image.describe() == f"PNG image, 40×30 pixels, {len(data)} B"


def test_a_large_image_is_downscaled_to_the_long_edge_a_model_reads() -> None:
    data = encoded("JPEG", (4000, 2000))
    image = prepare_image(data, "big.jpg")
    width, height = image.part.width, image.part.height
    assert width <= MAX_EDGE and width * height <= MAX_SENT_PIXELS and width * height > 0.98 * MAX_SENT_PIXELS
    assert abs(width / height - 2) < 0.01  # the shape kept
    sent = Image.open(io.BytesIO(base64.b64decode(image.part.data)))
    assert sent.format == "JPEG" and sent.size == (width, height)
    assert image.details("big.jpg")["downscaled_from"] == {"width": 4000, "height": 2000, "bytes": len(data)}
    assert "downscaled from 4000×2000" in image.describe()
    tall = prepare_image(encoded("PNG", (200, 6000)), "tall.png").part
    assert tall.width == 52 and MAX_EDGE - 10 <= tall.height <= MAX_EDGE  # the long edge binds before the pixels


def test_a_screenshot_past_the_pixels_alone_is_sent_as_it_is_without_pillow(monkeypatch: pytest.MonkeyPatch) -> None:
    """1400×1000 is within the long edge but past ~1,600 tokens: Pillow brings it down; without it the provider does."""
    data = encoded("PNG", (1400, 1000))
    assert prepare_image(data, "s.png").part.width < 1400
    monkeypatch.setitem(sys.modules, "PIL", None)
    assert base64.b64decode(prepare_image(data, "s.png").part.data) == data


def test_a_large_gif_becomes_a_png() -> None:
    image = prepare_image(encoded("GIF", (3200, 100), "P"), "wide.gif")  # 320,000 pixels: the long edge binds
    assert image.part.media_type == "image/png" and (image.part.width, image.part.height) == (MAX_EDGE, 49)


def test_a_header_that_claims_billions_of_pixels_is_never_decoded() -> None:
    with pytest.raises(ValueError, match="more than cog decodes"):
        prepare_image(hand_png(100_000, 100_000), "bomb.png")


def test_without_pillow_a_large_image_says_its_size_and_how_to_enable_downscaling(monkeypatch: pytest.MonkeyPatch) -> None:
    small, big = encoded("PNG"), encoded("JPEG", (3000, 2000))
    monkeypatch.setitem(sys.modules, "PIL", None)  # the light install: `import PIL` fails
    assert not prepare_image(small, "small.png").downscaled  # one that fits needs no Pillow
    with pytest.raises(ValueError, match=r"JPEG image of 3000×2000 pixels.*pip install 'cogcli\[images\]'"):
        prepare_image(big, "big.jpg")


def test_a_body_pillow_cannot_decode_is_a_bad_image() -> None:
    png = hand_png(3000, 3000)  # chunks well formed, but its IDAT holds no 3000×3000 image
    with pytest.raises(BadImage, match="cannot be decoded"):
        prepare_image(png, "x.png")


# --- read_file -----------------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "README.md").write_text("hello\n")
    (root / "shot.png").write_bytes(encoded("PNG"))
    (root / "photo.txt").write_bytes(encoded("JPEG", (64, 48)))  # an image by its bytes, whatever its name
    (root / "notes.png").write_text("not an image at all\n")
    (root / "broken.png").write_bytes(encoded("PNG")[:-20])
    (root / "id_rsa.png").write_bytes(encoded("PNG"))
    (tmp_path / "outside.png").write_bytes(encoded("PNG"))
    (root / "link.png").symlink_to(tmp_path / "outside.png")
    return init_git_repo(root)


async def read(repo: Path, path: str, **more: object):
    return await invoke_tool("read_file", {"path": path, **more}, tools=workspace_tools(repo))


async def test_read_file_of_an_image_gives_the_image_its_facts_and_its_presentation(repo: Path) -> None:
    result = await read(repo, "shot.png")
    assert result.ok, result.error
    size = (repo / "shot.png").stat().st_size
    assert isinstance(result.result, ImageContent)
    assert result.model_text() == f"shot.png: PNG image, 40×30 pixels, {size} B"
    [image] = result.model_images()
    assert base64.b64decode(image.data) == (repo / "shot.png").read_bytes()
    assert result.details == {"path": "shot.png", "media_type": "image/png", "width": 40, "height": 30, "bytes": size, "downscaled_from": None}
    assert result.presentation is not None and result.presentation.detail == f"shot.png · 40×30 · {size} B"
    jpeg = await read(repo, "photo.txt")
    assert jpeg.details["media_type"] == "image/jpeg" and jpeg.model_images()[0].media_type == "image/jpeg"
    text = await read(repo, "notes.png")
    assert text.ok and "not an image at all" in text.model_text() and text.model_images() == []


async def test_read_file_refuses_broken_images_ranges_secrets_and_links_out(repo: Path) -> None:
    broken = await read(repo, "broken.png")
    assert broken.error_code == "FILE_NOT_TEXT" and "broken.png starts like a PNG image but is not a valid one" in broken.error
    ranged = await read(repo, "shot.png", offset=1, limit=10)
    assert ranged.error_code == "INVALID_ARGUMENTS" and "read it without them" in ranged.error
    secret = await read(repo, "id_rsa.png")
    assert not secret.ok and secret.model_images() == []
    outside = await read(repo, "link.png")
    assert not outside.ok and outside.model_images() == []


async def test_events_carry_the_facts_and_the_thread_the_bytes(repo: Path) -> None:
    result = await read(repo, "shot.png")
    event = ToolResultEvent.of(result).model_dump_json()
    assert result.model_images()[0].data not in event and '"width":40' in event
    entry = ToolResultEntry.of(result)
    metadata = entry.metadata.model_dump_json()
    assert result.model_images()[0].data not in metadata
    store = ThreadStore(":memory:")
    thread = store.create_thread().id
    call = ToolCallRequest(id=result.call_id, name="read_file", arguments={"path": "shot.png"})
    from cogcli.threads.entries import AssistantEntry, UserEntry

    store.append(thread, [UserEntry(content="look"), AssistantEntry(tool_calls=[call]), entry])
    history = build_history("sys", store.entries(thread))
    assert history[-1].role == "tool" and history[-1].images == result.model_images()
    assert [r.result for r in ToolResultEntry.model_validate_json(entry.model_dump_json()).results()][0]["image"]["width"] == 40


# --- vision, compaction ---------------------------------------------------------------------------------


def test_vision_by_model_name_and_the_setting_overrides() -> None:
    assert vision.VISION_CHOICES == VISION_CHOICES
    for name in ("anthropic:claude-sonnet-4-5", "openai:gpt-4o-mini", "openai:gpt-5", "ollama:llava:13b", "ollama:qwen2.5vl:7b", "openai:o3"):
        assert sees_images(name), name
    for name in ("openai:gpt-3.5-turbo", "openai:o3-mini", "ollama:llama3.1:8b", "anthropic:claude-2.1", "openai:deepseek-coder"):
        assert not sees_images(name), name
    assert sees_images("openai:gpt-3.5-turbo", "on") and not sees_images("openai:gpt-4o", "off")


def image_message(width: int = 1200, height: int = 900) -> Message:
    part = prepare_image(encoded("PNG", (width, height)), "shot.png").part
    return Message(role="tool", tool_call_id="c1", name="read_file", content="shot.png: PNG image", images=[part])


def test_a_blind_model_reads_a_text_in_place_of_each_image() -> None:
    message = image_message()
    [sent] = without_images([message])
    assert sent.images == [] and sent.content.startswith("shot.png: PNG image\n[image shot.png (image/png, 1200×900) not shown: ")
    assert NO_VISION in sent.content


def test_compaction_counts_an_image_by_its_pixels_and_drops_an_old_one() -> None:
    message = image_message()
    assert estimate_message(message) >= 1200 * 900 // 750  # not its base64 (which would be far more)
    assert estimate_message(message) < 1200 * 900 // 750 + 50
    calls = [ToolCallRequest(id="c1", name="read_file", arguments={"path": "shot.png"})]
    history = [Message(role="user", content="look"), Message(role="assistant", tool_calls=calls), message,
               Message(role="assistant", content="A red picture."), Message(role="user", content="thanks")]
    out, dropped, saved = drop_results(history, need=1000)
    assert out[2].images == [] and "read_file shot.png" in out[2].content and dropped[0].tool_call_id == "c1"
    assert saved >= 1000


async def test_under_an_editor_an_image_is_read_from_disk_and_text_through_the_editor(repo: Path) -> None:
    """``cog acp`` reads files through the editor's ``fs/read_text_file`` (unsaved changes): never an image."""
    from cogcli.acp.files import editor_read_file
    from cogcli.settings.load import load_settings

    asked: list[str] = []

    async def editor_reads(path: str) -> str:
        asked.append(path)
        return "as the editor has it\n"

    original = next(t for t in workspace_tools(repo) if t.name == "read_file")
    tool = editor_read_file(original, load_settings(repo), editor_reads)
    image = await invoke_tool(tool, {"path": "shot.png"})
    assert image.ok and image.model_images()[0].width == 40 and asked == []
    text = await invoke_tool(tool, {"path": "README.md"})
    assert "as the editor has it" in text.model_text() and asked == [str(repo / "README.md")]
