"""The shared pieces of the HTTP clients: SSE parsing, Retry-After, the retry loop, redaction."""

from __future__ import annotations

import email.utils
import time
from collections.abc import AsyncIterator

import anyio

from cogcli.contract.errors import ErrorCode, ModelError
from cogcli.models.sse import RetryableError, RetryPolicy, SSEEvent, aiter_sse, parse_retry_after, stream_with_retries
from cogcli.models.sse import hide_known_secrets as redact


async def _lines(text: str) -> AsyncIterator[str]:
    for line in text.splitlines():
        yield line


def parse(text: str) -> list[SSEEvent]:
    async def run() -> list[SSEEvent]:
        return [e async for e in aiter_sse(_lines(text))]

    return anyio.run(run)


def test_sse_fields_comments_multiline_data_and_crlf() -> None:
    text = (
        ": keep-alive comment\r\n"
        "event: content_block_delta\r\n"
        'data: {"a": 1}\r\n'
        "\r\n"
        "data:first\n"
        "data: second\n"
        "id: 7\n"
        "\n"
        "\n"
        "event: ping\n"
        "data: {}\n"
        "\n"
        "data: [DONE]"  # last event without its blank line
    )
    assert parse(text) == [
        SSEEvent("content_block_delta", '{"a": 1}'),
        SSEEvent("message", "first\nsecond"),
        SSEEvent("ping", "{}"),
        SSEEvent("message", "[DONE]"),
    ]
    assert parse(text)[0].json() == {"a": 1}


def test_an_event_name_without_data_is_not_dispatched() -> None:
    assert parse("event: lonely\n\ndata: x\n\n") == [SSEEvent("message", "x")]


def test_retry_after_in_seconds_or_as_an_http_date() -> None:
    assert parse_retry_after("0") == 0.0
    assert parse_retry_after(" 2.5 ") == 2.5
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= parse_retry_after(later) <= 31


def test_backoff_grows_to_a_cap_and_retry_after_wins() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=3.0)
    assert [policy.delay(n) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert policy.delay(3, retry_after=0.0) == 0.0


def test_redact_replaces_every_secret_and_ignores_empty_ones() -> None:
    assert redact("key sk-abcdef and sk-abcdef", ["sk-abcdef", None, ""]) == "key [redacted] and [redacted]"


def run_retries(attempts: list[list[object]], policy: RetryPolicy) -> tuple[list[object], int, Exception | None]:
    """Drive stream_with_retries over scripted attempts: items to yield, a RetryableError to raise."""
    calls = 0

    async def attempt() -> AsyncIterator[object]:
        nonlocal calls
        script = attempts[calls]
        calls += 1
        for item in script:
            if isinstance(item, Exception):
                raise item
            yield item

    async def run() -> tuple[list[object], Exception | None]:
        got: list[object] = []
        try:
            async for item in stream_with_retries(attempt, policy, label="test:m"):
                got.append(item)
        except ModelError as exc:
            return got, exc
        return got, None

    got, err = anyio.run(run)
    return got, calls, err


def test_retries_happen_only_before_the_first_item() -> None:
    fail = RetryableError("HTTP 503", retry_after=0)
    got, calls, err = run_retries([[fail], [fail], ["a", "b"]], RetryPolicy(retries=3, base_delay=0))
    assert (got, calls, err) == (["a", "b"], 3, None)

    got, calls, err = run_retries([["a", RetryableError("reset")], ["never"]], RetryPolicy(retries=3, base_delay=0))
    assert got == ["a"] and calls == 1
    assert isinstance(err, ModelError) and err.code == ErrorCode.MODEL_STREAM_ERROR and "mid-turn" in err.message


def test_retries_are_bounded() -> None:
    got, calls, err = run_retries([[RetryableError("HTTP 500")]] * 10, RetryPolicy(retries=2, base_delay=0))
    assert calls == 3 and got == []
    assert err is not None and err.message == "test:m: HTTP 500 (gave up after 3 attempts)"


def test_a_retry_after_beyond_the_limit_fails_at_once() -> None:
    got, calls, err = run_retries(
        [[RetryableError("HTTP 429", retry_after=3600)], ["x"]], RetryPolicy(retries=3, max_retry_after=60)
    )
    assert calls == 1 and err is not None and "retry after 3600s" in err.message


def test_no_retries_means_one_attempt() -> None:
    got, calls, err = run_retries([[RetryableError("cannot connect")], ["x"]], RetryPolicy(retries=0))
    assert calls == 1 and err is not None and err.message == "test:m: cannot connect"
