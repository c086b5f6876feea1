"""Images for a model: recognised by their magic bytes (never the file name), their size read from
the headers by hand (PNG ``IHDR``, JPEG ``SOF``, GIF's screen, WebP ``VP8``/``VP8L``/``VP8X``),
their structure checked, and sent as they are — or downscaled with Pillow (``cogcli[images]``,
imported only then) when larger than a model reads.

Every byte is hostile: a ``.png`` that is no PNG, a header that claims 100 000 × 100 000 pixels,
chunks whose lengths run past the end, a JPEG without a frame. Each gets :class:`BadImage` (or
:class:`ImageTooLarge`) with a message that says what is wrong and what to do; nothing is decoded
before the header and the file's size passed the limits, and a body cog cannot decode itself is
checked for its structure (PNG chunk CRCs, JPEG scan and end markers, GIF trailer, the RIFF size)
so that a broken image never reaches a provider (which would refuse every later request of the
thread that holds it).
"""

from __future__ import annotations

import base64
import io
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.contract.output import ImageContent, ImagePart, ToolOutputResult, tool_output

#: the longest edge sent: Anthropic's recommendation (larger images are scaled down by the provider
#: anyway, after the upload and the wait); OpenAI's high detail tiles a 2048 px fit of it
MAX_EDGE = 1568
#: the most pixels sent: Anthropic scales anything past ~1,600 tokens (w×h/750) down to this
MAX_SENT_PIXELS = 1_200_000
#: at most this many pixels are ever decoded (a decompression bomb is refused from its header)
MAX_PIXELS = 50_000_000
#: the bytes one image may take when sent: its base64 within Anthropic's 5 MB per image (OpenAI takes 20 MB)
MAX_SENT_BYTES = 5 * 1024 * 1024 * 3 // 4
#: an image file larger than this is not read at all
MAX_FILE_BYTES = 20 * 1024 * 1024
#: what names an image format's first bytes: enough of a file to recognise one
HEAD_BYTES = 16

_FORMAT = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WebP"}
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PILLOW_HINT = "install Pillow to have cog downscale it (pip install 'cogcli[images]')"


class BadImage(ValueError):
    """The bytes look like an image (or were given as one) but are not a well-formed one."""


class ImageTooLarge(ValueError):
    """A well-formed image larger than cog sends (or decodes)."""


@dataclass(frozen=True, slots=True)
class ImageInfo:
    """An image's media type and size."""
    media_type: str
    width: int
    height: int

    @property
    def format(self) -> str:
        return _FORMAT[self.media_type]


def sniff(head: bytes) -> str | None:
    """The media type the first bytes of a file name (PNG, JPEG, GIF, WebP), or None."""
    if head.startswith(_PNG_SIGNATURE):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_info(data: bytes) -> ImageInfo:
    """The format and size of an image from its headers, its structure checked; :class:`BadImage`
    when it is none of the four formats or not a well-formed one."""
    media_type = sniff(data[:HEAD_BYTES])
    if media_type is None:
        raise BadImage("it is not a PNG, JPEG, GIF or WebP image (its first bytes name none of them)")
    width, height = _READERS[media_type](data)
    if width <= 0 or height <= 0:
        raise BadImage(f"its header says it is {width}×{height} pixels")
    return ImageInfo(media_type, width, height)


def _png(data: bytes) -> tuple[int, int]:
    pos, size = 8, None
    seen_data = False
    while True:
        if pos + 8 > len(data):
            raise BadImage("it ends before its IEND chunk (a cut or broken PNG)")
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        end = pos + 8 + length + 4
        if end > len(data):
            raise BadImage(f"its {kind!r} chunk runs past the end of the file (a cut or broken PNG)")
        body = data[pos + 8 : pos + 8 + length]
        if zlib.crc32(kind + body) != struct.unpack(">I", data[end - 4 : end])[0]:
            raise BadImage(f"the checksum of its {kind!r} chunk is wrong (a broken PNG)")
        if size is None:
            if kind != b"IHDR" or length != 13:
                raise BadImage("its first chunk is not a 13-byte IHDR")
            size = struct.unpack(">II", body[:8])
        seen_data = seen_data or kind == b"IDAT"
        if kind == b"IEND":
            if not seen_data:
                raise BadImage("it has no image data (no IDAT chunk)")
            return size
        pos = end


def _jpeg(data: bytes) -> tuple[int, int]:
    pos, size = 2, None
    while pos + 4 <= len(data):
        if data[pos] != 0xFF:
            raise BadImage(f"byte {pos} is not a marker (a broken JPEG)")
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte before a marker
            pos += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            pos += 2
            continue
        length = struct.unpack(">H", data[pos + 2 : pos + 4])[0]
        if length < 2 or pos + 2 + length > len(data):
            raise BadImage(f"the segment at byte {pos} runs past the end of the file (a cut or broken JPEG)")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # a start of frame
            if length < 8:
                raise BadImage("its frame header is too short")
            height, width = struct.unpack(">HH", data[pos + 5 : pos + 9])
            size = (width, height)
        if marker == 0xDA:  # start of scan: the compressed data follows, up to the end marker
            if size is None:
                raise BadImage("it has no frame header (SOF) before its image data")
            if b"\xff\xd9" not in data[pos + 2 + length :]:
                raise BadImage("it ends without an end-of-image marker (a cut JPEG)")
            return size
        pos += 2 + length
    raise BadImage("it ends before its image data (a cut or broken JPEG)")


def _gif(data: bytes) -> tuple[int, int]:
    if len(data) < 14:
        raise BadImage("it ends inside its header")
    size = struct.unpack("<HH", data[6:10])
    pos = 13 + _color_table(data[10])
    frames = 0
    while pos < len(data):
        kind = data[pos]
        if kind == 0x3B:  # the trailer
            if not frames:
                raise BadImage("it holds no image")
            return size
        if kind == 0x21:  # an extension: its label, then sub-blocks
            pos = _sub_blocks(data, pos + 2)
        elif kind == 0x2C:  # an image: its descriptor, a local color table, the LZW code size, sub-blocks
            if pos + 10 > len(data):
                break
            pos = _sub_blocks(data, pos + 10 + _color_table(data[pos + 9]) + 1)
            frames += 1
        else:
            raise BadImage(f"byte {pos} starts no GIF block (a broken GIF)")
    raise BadImage("it ends without the GIF trailer (a cut GIF)")


def _color_table(packed: int) -> int:
    return 3 * (2 << (packed & 7)) if packed & 0x80 else 0


def _sub_blocks(data: bytes, pos: int) -> int:
    """Where the sub-blocks starting at ``pos`` end (past their zero-length terminator)."""
    while pos < len(data):
        if data[pos] == 0:
            return pos + 1
        pos += 1 + data[pos]
    raise BadImage("it ends inside a block (a cut GIF)")


def _webp(data: bytes) -> tuple[int, int]:
    riff = struct.unpack("<I", data[4:8])[0]
    if riff + 8 > len(data) or riff < 12 or len(data) < 30:
        raise BadImage("its RIFF size says it is longer than the file (a cut WebP)")
    kind, body = data[12:16], data[20:]
    if kind == b"VP8 ":
        if body[3:6] != b"\x9d\x01\x2a":
            raise BadImage("its VP8 frame has no start code")
        width, height = struct.unpack("<HH", body[6:10])
        return width & 0x3FFF, height & 0x3FFF
    if kind == b"VP8L":
        if body[0] != 0x2F:
            raise BadImage("its VP8L data has no signature")
        bits = int.from_bytes(body[1:5], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8X":
        return int.from_bytes(body[4:7], "little") + 1, int.from_bytes(body[7:10], "little") + 1
    raise BadImage(f"its first chunk {kind!r} is none of VP8, VP8L, VP8X")


_READERS = {"image/png": _png, "image/jpeg": _jpeg, "image/gif": _gif, "image/webp": _webp}


@dataclass(frozen=True, slots=True)
class PreparedImage:
    """An image as a model gets it, and what it was before."""

    part: ImagePart
    info: ImageInfo
    original_bytes: int

    @property
    def downscaled(self) -> bool:
        return (self.part.width, self.part.height) != (self.info.width, self.info.height) or self.part.size != self.original_bytes

    def describe(self) -> str:
        """``PNG image, 800×600 pixels, 120 KB`` (and what it was downscaled from)."""
        part = self.part
        text = f"{_FORMAT[part.media_type]} image, {part.width}×{part.height} pixels, {human_bytes(part.size)}"
        if self.downscaled:
            text += f" (downscaled from {self.info.width}×{self.info.height}, {human_bytes(self.original_bytes)})"
        return text

    def details(self, path: str) -> dict[str, Any]:
        part = self.part
        return {
            "path": path, "media_type": part.media_type, "width": part.width, "height": part.height, "bytes": part.size,
            "downscaled_from": {"width": self.info.width, "height": self.info.height, "bytes": self.original_bytes} if self.downscaled else None,
        }


def human_bytes(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def prepare_image(data: bytes, name: str) -> PreparedImage:
    """``data`` as a model gets it: as it is when it fits (:data:`MAX_EDGE`, :data:`MAX_SENT_PIXELS`,
    :data:`MAX_SENT_BYTES`), else downscaled with Pillow. Without Pillow, an image past the pixels
    alone goes as it is (the provider scales it); one past the long edge or the bytes is refused.
    :class:`BadImage` for a malformed image, :class:`ImageTooLarge` for one past what cog decodes,
    or too large to send when Pillow is not installed."""
    info = image_info(data)
    shape = f"{info.format} image of {info.width}×{info.height} pixels ({human_bytes(len(data))})"
    if info.width * info.height > MAX_PIXELS:
        raise ImageTooLarge(f"it is a {shape}: more than cog decodes ({MAX_PIXELS:,} pixels); scale it down first")
    fits = max(info.width, info.height) <= MAX_EDGE and len(data) <= MAX_SENT_BYTES
    as_is = PreparedImage(ImagePart(media_type=info.media_type, data=base64.b64encode(data).decode("ascii"),  # type: ignore[arg-type]
                                    width=info.width, height=info.height, name=name), info, len(data)) if fits else None
    if as_is is not None and info.width * info.height <= MAX_SENT_PIXELS:
        return as_is
    try:
        from PIL import Image  # only to downscale: the light install reads images that fit without it
    except ImportError:
        if as_is is not None:
            return as_is
        raise ImageTooLarge(
            f"it is a {shape}: larger than a model reads ({MAX_EDGE} px on the long edge, {human_bytes(MAX_SENT_BYTES)}); "
            f"{PILLOW_HINT}, or scale it down first"
        ) from None
    return PreparedImage(_downscaled(Image, data, info, name), info, len(data))


def _downscaled(image_module: Any, data: bytes, info: ImageInfo, name: str) -> ImagePart:
    image_module.MAX_IMAGE_PIXELS = MAX_PIXELS
    try:
        with image_module.open(io.BytesIO(data), formats=[info.format.upper()]) as img:
            if (img.width, img.height) != (info.width, info.height):
                raise BadImage(f"its header says {info.width}×{info.height} but its frame is {img.width}×{img.height}")
            scale = min(MAX_EDGE / max(info.width, info.height), (MAX_SENT_PIXELS / (info.width * info.height)) ** 0.5, 1.0)
            box = (max(1, int(info.width * scale)), max(1, int(info.height * scale)))
            img.draft("RGB", box)  # JPEG: decode at a fraction of the size when it can
            img.thumbnail(box)
            out_format = info.format.upper() if info.media_type in ("image/png", "image/jpeg", "image/webp") else "PNG"
            frame = img if out_format != "JPEG" or img.mode in ("RGB", "L") else img.convert("RGB")
            encoded = _encode(frame, out_format)
            if len(encoded) > MAX_SENT_BYTES:  # a noisy PNG: a photo's compression fits it
                out_format = "JPEG"
                encoded = _encode(frame if frame.mode in ("RGB", "L") else frame.convert("RGB"), out_format)
            width, height = frame.size
    except (BadImage, ImageTooLarge):
        raise
    except Exception as exc:  # Pillow's many errors for a body it cannot decode
        raise BadImage(f"its image data cannot be decoded ({type(exc).__name__}: {exc})") from None
    if len(encoded) > MAX_SENT_BYTES:
        raise ImageTooLarge(f"even downscaled to {width}×{height} it takes {human_bytes(len(encoded))}")
    media_type = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}[out_format]
    return ImagePart(media_type=media_type, data=base64.b64encode(encoded).decode("ascii"), width=width, height=height, name=name)  # type: ignore[arg-type]


def _encode(img: Any, out_format: str) -> bytes:
    buffer = io.BytesIO()
    img.save(buffer, format=out_format, **({"quality": 85} if out_format in ("JPEG", "WEBP") else {"optimize": True}))
    return buffer.getvalue()


def attached_image(path: Path) -> PreparedImage:
    """An image file the person attaches (``/image PATH``, ``cog edit --image``): read whole (at most
    :data:`MAX_FILE_BYTES`), recognised and prepared as :func:`prepare_image` does. A :class:`ValueError`
    (:class:`BadImage`, :class:`ImageTooLarge`, or a file that cannot be read) says what is wrong."""
    try:
        if not path.is_file():  # a folder, a pipe that would block: said, never opened
            raise BadImage(f"{path} is not a file; give the path of an image file" if path.exists() else f"{path} does not exist")
        with path.open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise BadImage(f"{path} cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_FILE_BYTES:
        raise ImageTooLarge(f"{path} is larger than {human_bytes(MAX_FILE_BYTES)}, more than cog reads for an image")
    try:
        return prepare_image(data, path.name)
    except (BadImage, ImageTooLarge) as exc:
        raise type(exc)(f"{path} cannot be attached: {exc}") from None


def read_image(f: BinaryIO, shown: str, media_type: str, size: int, ranged: bool) -> ToolOutputResult[ImageContent]:
    """``read_file`` of an image (``f`` open at its first bytes, which name ``media_type``): the
    image for a vision model, its facts for the application, ``photo.png · 800×600 · 120 KB`` for
    the person. A malformed or too large image is a :class:`ToolCallError` saying which and why."""
    kind = _FORMAT[media_type]
    if ranged:
        raise ToolCallError(f"{shown} is a {kind} image: offset and limit count lines of text; read it without them",
                            code=ErrorCode.INVALID_ARGUMENTS)
    if size > MAX_FILE_BYTES:
        raise ToolCallError(f"{shown} is a {kind} image of {human_bytes(size)}, more than cog reads for an image "
                            f"({human_bytes(MAX_FILE_BYTES)})", code=ErrorCode.FILE_TOO_LARGE)
    f.seek(0)
    data = f.read(MAX_FILE_BYTES + 1)
    try:
        image = prepare_image(data, shown)
    except BadImage as exc:
        raise ToolCallError(f"{shown} starts like a {kind} image but is not a valid one: {exc}", code=ErrorCode.FILE_NOT_TEXT) from None
    except ImageTooLarge as exc:
        raise ToolCallError(f"{shown} cannot be sent as an image: {exc}", code=ErrorCode.FILE_TOO_LARGE) from None
    part = image.part
    return tool_output(
        ImageContent(text=f"{shown}: {image.describe()}", image=part),
        details=image.details(shown),
        presentation={"label": "Read image", "icon": "image", "detail": f"{shown} · {part.width}×{part.height} · {human_bytes(part.size)}"},
    )


def attached_images(paths: list[Path], cwd: Path) -> list[ImagePart]:
    """The images of ``--image`` options (relative paths from ``cwd``), each as :func:`attached_image`
    makes it; the first that cannot be used raises its :class:`ValueError`."""
    return [attached_image(path.expanduser() if path.expanduser().is_absolute() else cwd / path).part for path in paths]
