"""JSON lines under stress: the writer's flush policy (live on a pipe, buffered on a file, nothing
ever dropped), lines identical to the documented wire form, and `cog render` on streams cut off
mid-line at any byte. (Garbage, binary and unknown-type lines: tests/test_cli_basics.py.)"""

from __future__ import annotations

import json
import os
import random
import select
from pathlib import Path

from cli_helpers import REPLAY, run_cog
from render_helpers import DEMO_TEXT, demo_events, event_line

from cogcli.wire.events import ToolResultEvent, ToolUpdateEvent, parse_event
from cogcli.render.jsonl import JsonlWriter, event_bytes

FIX = "Fix the failing test"


def update(i: int, content: str = "x") -> ToolUpdateEvent:
    return ToolUpdateEvent(tool_call_id="c1", tool_name="run_tests", content=f"{content} {i}", details={"n": i}, seq=i, timestamp="t")


def test_lines_are_the_documented_wire_form() -> None:
    # the fast serialiser writes exactly what json.dumps of to_wire() wrote: compact, UTF-8, no nulls
    events = [*demo_events(), update(1, "é ✓ \u2028 </script>"), ToolUpdateEvent(tool_call_id="c", details={"big": 10**16, "f": 0.1})]
    for event in events:
        expected = json.dumps(event.to_wire(), ensure_ascii=False, separators=(",", ":"))
        assert event_line(event) == expected
        assert event_bytes(event) == expected.encode("utf-8")
        assert parse_event(event_line(event)) == event


def test_text_utf8_cannot_carry_is_escaped_not_dropped() -> None:
    # a file name that is not UTF-8 reaches Python as lone surrogates (os.fsdecode)
    name = os.fsdecode(b"caf\xe9.txt")
    event = ToolResultEvent(id="c", tool_call_id="c", tool_name="list_files", result=name)
    line = event_bytes(event)
    assert json.loads(line)["result"] == name  # valid JSON, and the exact text comes back
    out = _Sink()
    writer = JsonlWriter(out, live=True)
    writer.handle(event)
    assert out.data == line + b"\n" and not writer.broken


class _Sink:
    """A binary stream without a file descriptor."""

    def __init__(self) -> None:
        self.data = b""
        self.flushes = 0

    def write(self, data: bytes) -> int:
        self.data += data
        return len(data)

    def flush(self) -> None:
        self.flushes += 1


def test_on_a_pipe_every_line_is_readable_as_soon_as_it_is_written() -> None:
    read_fd, write_fd = os.pipe()
    with open(write_fd, "wb") as out, open(read_fd, "rb", buffering=0) as reader:
        writer = JsonlWriter(out)  # a buffered stream over a pipe: live is detected
        assert writer.live
        for i in range(50):
            writer.handle(update(i))
            ready, _, _ = select.select([reader], [], [], 10)
            assert ready, f"update {i} was not flushed to the pipe"
            assert json.loads(reader.read(65536))["seq"] == i


def test_on_a_file_progress_is_buffered_but_flushed_at_each_boundary_and_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with open(path, "wb") as out:
        writer = JsonlWriter(out)
        assert not writer.live
        for i in range(20):
            writer.handle(update(i))
        assert path.stat().st_size == 0  # a burst of progress is buffered
        writer.handle(ToolResultEvent(id="c1", tool_call_id="c1", tool_name="run_tests", result="ok", seq=20))
        assert len(path.read_bytes().splitlines()) == 21  # a result flushes everything before it
        writer.handle(update(21))
        writer._flushed_at -= 1  # a second later, more progress: what waited is written
        writer.handle(update(22))
        assert len(path.read_bytes().splitlines()) == 23
        writer.handle(update(23))
        writer.close()
        lines = path.read_bytes().splitlines()
    assert [json.loads(line)["seq"] for line in lines] == list(range(24))


def test_json_to_a_file_holds_every_event(make_repo, tmp_path: Path) -> None:
    # the whole run, redirected to a regular file (buffered): every event, in order, one finish
    repo = make_repo("calc")
    target = tmp_path / "out.jsonl"
    import subprocess

    from cli_helpers import cog_argv, cog_env

    with open(target, "wb") as out:
        done = subprocess.run([*cog_argv(), "edit", "--json", "--model", REPLAY, FIX], cwd=repo, env=cog_env(), stdout=out, stderr=subprocess.PIPE, timeout=180)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in target.read_bytes().splitlines()]
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert sum(e["type"] == "tool-update" for e in events) == 6 and events[-1]["type"] == "finish"


def test_render_of_a_stream_cut_at_any_byte_draws_what_arrived_and_never_tracebacks(tmp_path: Path) -> None:
    whole = "".join(event_line(e) + "\n" for e in demo_events()).encode("utf-8")
    rng = random.Random(7)
    cuts = sorted({rng.randrange(1, len(whole)) for _ in range(12)} | {len(whole) - 1})
    for cut in cuts:
        path = tmp_path / f"cut{cut}.jsonl"
        path.write_bytes(whole[:cut])
        out = run_cog(["render", str(path)], tmp_path)
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stderr
        complete = whole[:cut].count(b"\n")
        partial = not whole[:cut].endswith(b"\n") and not whole[:cut].endswith(b"}")  # "}" ends a whole event
        # a cut inside a multi-byte character or a JSON value is reported as that line, by number
        problems = [l for l in out.stderr.splitlines() if l.startswith("cog render: line ")]
        assert len(problems) == (1 if partial else 0), out.stderr
        if partial:
            assert problems[0].startswith(f"cog render: line {complete + 1}: ")
        # every row drawn is a row (text cut mid-sentence: the start of one) of the whole drawing
        rows = DEMO_TEXT.splitlines()
        for row in filter(None, out.stdout.splitlines()):
            assert any(full.startswith(row) for full in rows), (cut, row)
