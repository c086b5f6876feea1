"""OpenTelemetry spans of a run in the GenAI conventions, read back with the SDK's in-memory
exporter (and, when the OTLP exporter is installed, from a real OTLP/HTTP endpoint on loopback)."""

from __future__ import annotations

import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from cogcli.settings.load import load_settings
from cogcli.models.base import UsageReport
from cogcli.models.scripted import Call, ScriptedModel, Turn
from cogcli.session import Session
from cogcli.wire.telemetry import Telemetry, wanted

FIX = {"path": "calc/ops.py", "old_text": "    return a - b\n\n\ndef sub", "new_text": "    return a + b\n\n\ndef sub"}


def calc(tmp_path: Path) -> Path:
    import shutil

    repo = tmp_path / "calc"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "calc", repo)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


async def traced_run(tmp_path: Path, script: list[Any], monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    repo = calc(tmp_path)
    settings = load_settings(repo, model="openai:gpt-4o-mini", sandbox="off")
    model = ScriptedModel(script)
    model.name = "openai:gpt-4o-mini"  # type: ignore[misc]
    monkeypatch.setattr("cogcli.session.session.make_model", lambda settings, record=None: model)
    session = Session(settings, telemetry=Telemetry(provider))
    session.prepare()
    async with session:
        result = await session.run("Fix add")
    return sorted(exporter.get_finished_spans(), key=lambda s: s.start_time), result


@pytest.mark.anyio
async def test_a_run_is_an_agent_span_with_chat_and_tool_spans_named_as_the_conventions_say(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)
    spans, result = await traced_run(tmp_path, [
        Turn("Fixing.", [Call("c1", "edit_file", FIX), Call("c2", "read_file", {"path": "nope.py"})], usage=(120, 30)),
        Turn("Done.", usage=UsageReport(input_tokens=200, output_tokens=10, cached_input_tokens=100, cache_write_tokens=50)),
    ], monkeypatch)
    by_name = {s.name: s for s in spans}
    agent = by_name["invoke_agent cog"]
    assert agent.kind == SpanKind.INTERNAL
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent" and agent.attributes["gen_ai.agent.name"] == "cog"
    assert agent.attributes["gen_ai.conversation.id"] == result.thread_id
    assert agent.attributes["gen_ai.usage.input_tokens"] == 320 and agent.attributes["gen_ai.usage.output_tokens"] == 40
    chats = [s for s in spans if s.name == "chat gpt-4o-mini"]
    assert len(chats) == 2 and all(s.kind == SpanKind.CLIENT and s.parent.span_id == agent.context.span_id for s in chats)
    assert chats[0].attributes["gen_ai.operation.name"] == "chat" and chats[0].attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert chats[0].attributes["gen_ai.system"] == "openai" and "gen_ai.provider.name" not in chats[0].attributes
    assert chats[0].attributes["gen_ai.usage.input_tokens"] == 120 and chats[0].attributes["gen_ai.usage.output_tokens"] == 30
    assert tuple(chats[0].attributes["gen_ai.response.finish_reasons"]) == ("tool_calls",)
    # without the opt-in, the newer cache attributes stay out
    assert "gen_ai.usage.cache_read.input_tokens" not in chats[1].attributes
    edit, read = by_name["execute_tool edit_file"], by_name["execute_tool read_file"]
    for span, call_id in ((edit, "c1"), (read, "c2")):
        assert span.kind == SpanKind.INTERNAL and span.parent.span_id == agent.context.span_id
        assert span.attributes["gen_ai.operation.name"] == "execute_tool" and span.attributes["gen_ai.tool.call.id"] == call_id
        assert span.attributes["gen_ai.tool.type"] == "function"
    assert edit.attributes["gen_ai.tool.name"] == "edit_file" and "error.type" not in edit.attributes
    assert read.attributes["error.type"] == "FILE_NOT_FOUND" and read.status.status_code == StatusCode.ERROR
    assert agent.start_time <= chats[0].start_time and chats[1].end_time <= agent.end_time
    # no content is recorded: no argument, result or message text in any attribute
    assert not any("return a + b" in str(v) for s in spans for v in s.attributes.values())


@pytest.mark.anyio
async def test_opted_in_to_the_latest_conventions_the_cache_usage_and_provider_name_are_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "http,gen_ai_latest_experimental")
    spans, _ = await traced_run(tmp_path, [
        Turn("Done.", usage=UsageReport(input_tokens=200, output_tokens=10, cached_input_tokens=100, cache_write_tokens=50)),
    ], monkeypatch)
    chat = next(s for s in spans if s.name.startswith("chat "))
    assert chat.attributes["gen_ai.provider.name"] == "openai" and "gen_ai.system" not in chat.attributes
    assert chat.attributes["gen_ai.usage.cache_read.input_tokens"] == 100
    assert chat.attributes["gen_ai.usage.cache_creation.input_tokens"] == 50
    agent = next(s for s in spans if s.name == "invoke_agent cog")
    assert agent.attributes["gen_ai.usage.cache_read.input_tokens"] == 100


@pytest.mark.anyio
async def test_a_run_that_fails_says_why_on_its_span(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cogcli.models.scripted import Fail

    spans, _ = await traced_run(tmp_path, [Fail(Turn("half"), after=1, message="server closed the stream")], monkeypatch)
    agent = next(s for s in spans if s.name == "invoke_agent cog")
    chat = next(s for s in spans if s.name.startswith("chat "))
    assert agent.status.status_code == StatusCode.ERROR and agent.attributes["error.type"] == "MODEL_STREAM_ERROR"
    assert chat.attributes["error.type"] == "MODEL_STREAM_ERROR"


def test_spans_are_asked_for_by_the_environment_only() -> None:
    assert not wanted({})
    assert wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert wanted({"COG_OTEL": "1"})
    assert not wanted({"COG_OTEL": "1", "OTEL_SDK_DISABLED": "true"})


def test_cog_edit_sends_its_spans_to_an_otlp_endpoint_and_help_imports_no_opentelemetry(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from cli_helpers import CASSETTE, cog_env, run_cog

    received: list[bytes] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            received.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        repo = calc(tmp_path)
        endpoint = f"http://127.0.0.1:{server.server_port}"
        out = run_cog(["edit", "--model", f"replay:{CASSETTE}", "--sandbox", "off", "Fix add"], repo,
                      env={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"})
        assert out.returncode == 0, out.stderr
    finally:
        server.shutdown()
    names: list[str] = []
    attributes: dict[str, dict[str, Any]] = {}
    for body in received:
        request = ExportTraceServiceRequest.FromString(body)
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    names.append(span.name)
                    attributes[span.name] = {a.key: a.value for a in span.attributes}
    assert names.count("invoke_agent cog") == 1 and names.count("execute_tool run_tests") == 2
    assert len([n for n in names if n.startswith("chat ")]) == 5 and "execute_tool edit_file" in names
    assert attributes["invoke_agent cog"]["gen_ai.usage.input_tokens"].int_value == 812 + 1004 + 1391 + 1602 + 1790
    # cog --help never imports OpenTelemetry, even with an endpoint set
    code = "import sys\nfrom cogcli.cli import app\ntry:\n    app(['--help'], prog_name='cog')\nexcept SystemExit:\n    pass\nprint([m for m in sys.modules if m.startswith('opentelemetry')])"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cog_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}))
    assert shown.stdout.strip().splitlines()[-1] == "[]"
