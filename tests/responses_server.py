"""A loopback server speaking OpenAI's Responses API (``POST /v1/responses``, streamed), for tests.

Every event it streams is built as the official ``openai`` SDK's own stream event type
(``ResponseStreamEvent``: ``ResponseOutputItemAddedEvent``, ``ResponseTextDeltaEvent``,
``ResponseFunctionCallArgumentsDeltaEvent``, ``ResponseReasoningSummaryTextDeltaEvent``,
``ResponseCompletedEvent``…, items as ``ResponseReasoningItem``, ``ResponseFunctionToolCall``,
``ResponseApplyPatchToolCall``) and sent as the SDK serializes it; every request body is checked
against the SDK's ``ResponseCreateParamsStreaming`` — validated, and dumped back unchanged (a key
the SDK does not know anywhere in it is a difference) — and answered HTTP 400 when it is not one.
Like the API with ``store: false``, it refuses (HTTP 400, no script step taken):

- a ``reasoning`` input item that is not one it streamed, with the same ``encrypted_content``;
- a ``function_call_output`` / ``apply_patch_call_output`` whose ``call_id`` no earlier input
  item's call has (and an ``apply_patch_call_output`` for a function call, or the reverse).

Script steps are :mod:`model_servers`' (``Fail``, ``Cut``, ``Drop``, ``Raw``, callables) and
:class:`Answer` — a :class:`~model_servers.Reply` with the Responses API's own parts: reasoning
summary parts and their ``encrypted_content`` (sent only when the request includes
``reasoning.encrypted_content``), ``apply_patch_call`` operations, cached and reasoning tokens, an
``incomplete`` reason. ``srv.served_events`` keeps every event sent, as the SDK's models.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from model_servers import Fail, RecordedRequest, Reply, Script, _ModelServer, _pieces, _sse_block
from pydantic import TypeAdapter

from openai.types.responses import ResponseStreamEvent, response_create_params

EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
REQUEST: TypeAdapter[Any] = TypeAdapter(response_create_params.ResponseCreateParamsStreaming)


@dataclass
class Answer(Reply):
    """One response. ``summary``: the reasoning item's summary parts (a reasoning item is streamed
    when there are any, or ``encrypted``); ``patches``: ``apply_patch_call`` operations
    (``{"type", "path", "diff"}``), each ``(call_id, operation)``, after the function calls."""

    summary: Sequence[str] = ()
    encrypted: str | None = None
    patches: Sequence[tuple[str, dict[str, Any]]] = ()
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    #: ``incomplete_details.reason`` (``max_output_tokens``…): the response ends ``response.incomplete``
    incomplete: str | None = None


def check_request(body: Any) -> str | None:
    """What is wrong with a request body as the SDK's ``ResponseCreateParamsStreaming`` (None: nothing)."""
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    try:
        dumped = REQUEST.dump_python(REQUEST.validate_python(body), mode="json")
    except Exception as exc:  # pydantic's ValidationError, said as the API would
        return f"invalid request: {exc}"
    if dumped != body:
        return f"invalid request: keys the API does not know: sent {json.dumps(body)[:2000]}, the SDK's type keeps {json.dumps(dumped)[:2000]}"
    return None


class ResponsesServer(_ModelServer):
    """``POST /v1/responses`` with ``stream: true``, answered as Responses API stream events."""

    path = "/v1/responses"

    def __init__(self, script: Script = ()) -> None:
        super().__init__(script)
        #: every reasoning item this server streamed: id → encrypted_content
        self.reasoning_items: dict[str, str | None] = {}
        #: every event streamed, as the SDK's event models
        self.served_events: list[Any] = []

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = {429: "rate_limit_error", 401: "invalid_request_error", 400: "invalid_request_error"}.get(status, "server_error")
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}

    def refusal(self, body: Any) -> Fail | None:
        problem = check_request(body)
        if problem is None:
            problem = self._input_problem(body.get("input"))
        return None if problem is None else Fail(400, problem)

    def _input_problem(self, items: Any) -> str | None:
        calls: dict[str, str] = {}  # call_id → its item type
        for item in items if isinstance(items, list) else []:
            kind = item.get("type")
            if kind == "reasoning":
                if item.get("id") not in self.reasoning_items or not item.get("encrypted_content"):
                    return (f"Item with id '{item.get('id')}' not found. Items are not persisted when `store` is set to false. "
                            "Try again with `store` set to true, or remove this item from your input.")
                if self.reasoning_items[item["id"]] != item["encrypted_content"]:
                    return "The encrypted content for item " + str(item["id"]) + " could not be verified."
            elif kind in ("function_call", "apply_patch_call"):
                calls[item["call_id"]] = kind
            elif kind in ("function_call_output", "apply_patch_call_output"):
                made = calls.get(item["call_id"])
                if made is None or made != kind.removesuffix("_output"):
                    return f"No tool call found for {kind} with call_id {item['call_id']}."
        return None

    def render(self, reply: Reply, request: RecordedRequest) -> list[str]:
        body = request.body if isinstance(request.body, dict) else {}
        answer = reply if isinstance(reply, Answer) else Answer(reply.text, reply.tool_calls, reply.usage, chunk=reply.chunk)
        n = len(self.requests)
        include = "reasoning.encrypted_content" in (body.get("include") or [])
        events: list[dict[str, Any]] = []
        output: list[dict[str, Any]] = []

        def emit(kind: str, **fields: Any) -> None:
            events.append({"type": kind, "sequence_number": len(events), **fields})

        def item_done(index: int, item: dict[str, Any]) -> None:
            output.append(item)
            emit("response.output_item.done", output_index=index, item=item)

        def response(status: str, **fields: Any) -> dict[str, Any]:
            return {"id": f"resp_{n}", "object": "response", "created_at": 1_760_000_000, "model": body.get("model", "test"),
                    "status": status, "output": list(output), "parallel_tool_calls": True, "tool_choice": "auto",
                    "tools": [], "store": False, **fields}

        emit("response.created", response=response("in_progress"))
        emit("response.in_progress", response=response("in_progress"))
        index = 0
        if answer.summary or answer.encrypted:
            rid = f"rs_{n}_{index}"
            emit("response.output_item.added", output_index=index, item={"type": "reasoning", "id": rid, "summary": []})
            for s, part in enumerate(answer.summary):
                emit("response.reasoning_summary_part.added", item_id=rid, output_index=index, summary_index=s, part={"type": "summary_text", "text": ""})
                for piece in _pieces(part, answer.chunk):
                    emit("response.reasoning_summary_text.delta", item_id=rid, output_index=index, summary_index=s, delta=piece)
                emit("response.reasoning_summary_text.done", item_id=rid, output_index=index, summary_index=s, text=part)
                emit("response.reasoning_summary_part.done", item_id=rid, output_index=index, summary_index=s, part={"type": "summary_text", "text": part})
            item: dict[str, Any] = {"type": "reasoning", "id": rid, "summary": [{"type": "summary_text", "text": p} for p in answer.summary]}
            if include:
                item["encrypted_content"] = answer.encrypted or f"gAAAA-enc-{n}-{index}"
            self.reasoning_items[rid] = item.get("encrypted_content")
            item_done(index, item)
            index += 1
        if answer.text:
            mid = f"msg_{n}_{index}"
            emit("response.output_item.added", output_index=index, item={"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []})
            emit("response.content_part.added", item_id=mid, output_index=index, content_index=0, part={"type": "output_text", "text": "", "annotations": []})
            for piece in _pieces(answer.text, answer.chunk):
                emit("response.output_text.delta", item_id=mid, output_index=index, content_index=0, delta=piece, logprobs=[])
            emit("response.output_text.done", item_id=mid, output_index=index, content_index=0, text=answer.text, logprobs=[])
            done_part = {"type": "output_text", "text": answer.text, "annotations": []}
            emit("response.content_part.done", item_id=mid, output_index=index, content_index=0, part=done_part)
            item_done(index, {"type": "message", "id": mid, "role": "assistant", "status": "completed", "content": [done_part]})
            index += 1
        for call in answer.tool_calls:
            fid = f"fc_{n}_{index}"
            head = {"type": "function_call", "id": fid, "call_id": call.id, "name": call.name, "arguments": "", "status": "in_progress"}
            emit("response.output_item.added", output_index=index, item=head)
            for piece in _pieces(call.text, answer.chunk):
                emit("response.function_call_arguments.delta", item_id=fid, output_index=index, delta=piece)
            emit("response.function_call_arguments.done", item_id=fid, output_index=index, name=call.name, arguments=call.text)
            item_done(index, {**head, "arguments": call.text, "status": "completed"})
            index += 1
        for call_id, operation in answer.patches:
            aid = f"apc_{n}_{index}"
            head = {"type": "apply_patch_call", "id": aid, "call_id": call_id, "status": "in_progress",
                    "operation": {**operation, **({"diff": ""} if "diff" in operation else {})}}
            emit("response.output_item.added", output_index=index, item=head)
            item_done(index, {**head, "status": "completed", "operation": operation})
            index += 1
        i_tokens, o_tokens = answer.usage
        usage = {"input_tokens": i_tokens, "input_tokens_details": {"cached_tokens": answer.cached_tokens, "cache_write_tokens": 0},
                 "output_tokens": o_tokens, "output_tokens_details": {"reasoning_tokens": answer.reasoning_tokens},
                 "total_tokens": i_tokens + o_tokens}
        if answer.incomplete:
            emit("response.incomplete", response=response("incomplete", usage=usage, incomplete_details={"reason": answer.incomplete}))
        else:
            emit("response.completed", response=response("completed", usage=usage))
        models = [EVENTS.validate_python(e) for e in events]  # each one as the SDK reads it, or the test fails here
        self.served_events.extend(models)
        return [_sse_block(m.type, m.model_dump(mode="json", exclude_unset=True)) for m in models]



def served_types(server: ResponsesServer) -> list[str]:
    """The ``type`` of every event ``server`` streamed, in order."""
    return [e.type for e in server.served_events]
