"""Prompt caching (issue 27), what the person sees: the cache counts and the cost carried from the
provider's stream to ``finish.usage`` and the last line, recorded in cassettes and replayed, the
price table and its overrides, the settings."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from cache_servers import AnthropicCacheServer, OpenAICacheServer
from cli_helpers import json_lines, repo_with, run_cog
from model_servers import AnthropicServer, Reply, ToolCall, collect

from cogcli.settings.load import load_settings
from cogcli.contract.errors import ConfigError
from cogcli.wire.events import FinishEvent, Usage
from cogcli.models import Message, UsageReport, get_model
from cogcli.models.record import RecordingModel
from cogcli.models.replay import ReplayModel
from cogcli.models.sse import RetryPolicy
from cogcli.settings.prices import maintained_price
from cogcli.settings.prices import Price, cost_usd, format_cost, price_of
from cogcli.render.summary import RunSummary

FAST = RetryPolicy(retries=0)


# --- the price table ------------------------------------------------------------------------


def test_prices_for_known_models_and_their_dated_snapshots_only() -> None:
    # genai-prices answers first; a dated snapshot is its model's price
    assert price_of("anthropic:claude-sonnet-4-5") == maintained_price("anthropic", "claude-sonnet-4-5") is not None
    assert price_of("anthropic:claude-sonnet-4-5-20250929") == price_of("anthropic:claude-sonnet-4-5")
    assert price_of("openai:gpt-4o-2024-08-06") == price_of("openai:gpt-4o")
    assert price_of("openai:gpt-4o-mini").input < price_of("openai:gpt-4o").input  # the longer name, not gpt-4o's
    assert price_of("openai:openai/gpt-4.1-mini") == price_of("openai:gpt-4.1-mini")  # a gateway's vendor prefix
    assert price_of("anthropic:claude-opus-4-1-20250805").input == 15.0 and price_of("anthropic:claude-opus-4-5").input == 5.0
    # never a guess: a model that merely starts the same as a known one, a local model, a replay
    for unknown in ("openai:gpt-4o-turbo-x", "anthropic:claude-sonnet-9", "ollama:gpt-4o", "replay:x.jsonl", "openai:llama3.1"):
        assert price_of(unknown) is None, unknown


def test_overrides_add_and_win() -> None:
    mine = {"my-model": Price(input=1.0, output=2.0, cache_read=0.5, cache_write=1.0), "gpt-4o": Price(1, 1, 1, 1)}
    assert price_of("ollama:my-model", mine) == mine["my-model"]
    assert price_of("openai:gpt-4o-2024-08-06", mine) == mine["gpt-4o"]
    assert price_of("openai:gpt-4o-mini", mine) == maintained_price("openai", "gpt-4o-mini")


def test_cost_counts_plain_input_cache_reads_writes_and_output() -> None:
    price = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75, cache_write_1h=6.0)
    cost = cost_usd(price, input_tokens=10_000, output_tokens=1_000, cache_read_tokens=8_000, cache_write_tokens=1_500, cache_write_1h_tokens=500)
    assert cost == pytest.approx((500 * 3.0 + 8_000 * 0.3 + 1_000 * 3.75 + 500 * 6.0 + 1_000 * 15.0) / 1e6)
    assert cost_usd(None, input_tokens=10, output_tokens=1) is None
    assert (format_cost(None), format_cost(0.00123), format_cost(0.5), format_cost(12.345)) == ("unknown", "$0.0012", "$0.500", "$12.35")
    assert (format_cost(0.000006), format_cost(0.0)) == ("<$0.0001", "$0.0000")  # a few tokens: not a misleading $0.0000


def test_a_sum_of_usages_knows_its_cost_only_when_every_part_does() -> None:
    known = Usage(input_tokens=100, output_tokens=10, total_tokens=110, cached_input_tokens=50, cache_write_tokens=20, cost_usd=0.01)
    unknown = Usage(input_tokens=100, output_tokens=10, total_tokens=110)
    total = Usage() + known + known
    assert (total.cost_usd, total.cached_input_tokens, total.cache_write_tokens) == (pytest.approx(0.02), 100, 40)
    assert (Usage() + known + unknown).cost_usd is None
    assert (Usage() + unknown).cache_write_tokens is None  # not reported stays absent, not 0
    wire = (Usage() + known).to_wire()
    assert wire["cacheWriteTokens"] == 20 and wire["costUsd"] == pytest.approx(0.01)


# --- cassettes ------------------------------------------------------------------------------


def test_cassettes_record_and_replay_cache_counts_and_cost(tmp_path: Path) -> None:
    extra = {"cache_creation_input_tokens": 700, "cache_read_input_tokens": 2000}
    cassette = tmp_path / "run.jsonl"
    with AnthropicServer([Reply("hi", usage=(30, 8), usage_extra=extra)]) as srv:
        model = RecordingModel(get_model("anthropic:claude-sonnet-4-5", base_url=srv.base_url, api_key="k", retry=FAST), cassette)
        live = anyio.run(lambda: collect(model, [Message(role="user", content="go")], []))
    line = json.loads(cassette.read_text().splitlines()[1])
    assert line["usage"] == {"inputTokens": 2730, "outputTokens": 8, "cachedInputTokens": 2000, "cacheWriteTokens": 700,
                             "costUsd": pytest.approx((30 * 3 + 2000 * 0.3 + 700 * 3.75 + 8 * 15) / 1e6)}
    replayed = anyio.run(lambda: collect(ReplayModel(cassette), [Message(role="user", content="go")], []))
    assert [e for e in replayed if isinstance(e, UsageReport)] == [e for e in live if isinstance(e, UsageReport)]


def test_an_old_cassette_without_them_still_replays(tmp_path: Path) -> None:
    cassette = tmp_path / "old.jsonl"
    cassette.write_text(
        '{"type": "cassette", "schemaVersion": 1, "model": "openai:gpt-4o", "createdAt": "2026-01-01T00:00:00Z"}\n'
        '{"type": "turn", "text": "done", "toolCalls": [], "usage": {"inputTokens": 10, "outputTokens": 5}}\n'
    )
    events = anyio.run(lambda: collect(ReplayModel(cassette), [Message(role="user", content="go")], []))
    assert [e for e in events if isinstance(e, UsageReport)] == [UsageReport(input_tokens=10, output_tokens=5)]


# --- what the person sees -------------------------------------------------------------------


def last_line(usage: Usage) -> str:
    summary = RunSummary()
    summary.add(FinishEvent(message_id="m", thread_id="t", status="completed", steps=3, usage=usage))
    return summary.line()


def test_the_last_line_shows_cache_reads_writes_output_and_cost() -> None:
    usage = Usage(input_tokens=50_000, output_tokens=392, total_tokens=50_392, cached_input_tokens=44_000, cache_write_tokens=5_000, cost_usd=0.0912)
    assert last_line(usage) == "Done · 3 steps · $0.091 for 50,000 in (44,000 cache read, 5,000 cache write) + 392 out = 50,392 tokens"
    unknown = Usage(input_tokens=2_000, output_tokens=10, total_tokens=2_010, cached_input_tokens=1_024)
    assert last_line(unknown) == "Done · 3 steps · unknown cost for 2,000 in (1,024 cache read) + 10 out = 2,010 tokens"
    # a provider that said nothing of a cache, a model without a price: as before
    assert last_line(Usage(input_tokens=5_000, output_tokens=392, total_tokens=5_392)) == "Done · 3 steps · 5,392 tokens"


# --- settings -------------------------------------------------------------------------------


def test_cache_settings_from_cog_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COG_CACHE_TTL", raising=False)
    (tmp_path / "plain").mkdir()
    repo = repo_with(tmp_path, {"cog.toml": 'cache_ttl = "1h"\nprompt_cache_key = true\n[prices."my-model"]\ninput = 1\noutput = 4.5\ncache_read = 0.1\n'})
    settings = load_settings(repo)
    assert settings.cache_ttl == "1h" and settings.prompt_cache_key is True
    assert settings.prices["my-model"] == Price(input=1.0, output=4.5, cache_read=0.1, cache_write=1.0)
    assert load_settings(repo_with(tmp_path / "plain", {"a.py": ""})).cache_ttl == "5m"  # the default
    monkeypatch.setenv("COG_CACHE_TTL", "5m")
    assert load_settings(repo).cache_ttl == "5m"  # the environment over the workspace
    monkeypatch.setenv("COG_CACHE_TTL", "1d")
    with pytest.raises(ConfigError, match="COG_CACHE_TTL must be 5m or 1h"):
        load_settings(repo)


@pytest.mark.parametrize(
    ("toml", "words"),
    [
        ('cache_ttl = "2h"', ["cache_ttl", '"5m"']),
        ("prompt_cache_key = 1", ["prompt_cache_key", "true"]),
        ('[prices."m"]\ninput = -1\noutput = 1', ["prices.m.input", "USD per million"]),
        ('[prices."m"]\ninput = 1', ["prices.m.output"]),
        ('[prices."m"]\ninput = 1\noutput = 1\nspeed = 3', ["prices.m.speed"]),
    ],
)
def test_bad_cache_settings_name_the_key_and_the_fix(tmp_path: Path, toml: str, words: list[str]) -> None:
    repo = repo_with(tmp_path, {"cog.toml": toml + "\n"})
    with pytest.raises(ConfigError) as err:
        load_settings(repo)
    for word in words:
        assert word in err.value.message


# --- end to end: cog edit against the billing servers ---------------------------------------


def repo_for_run(tmp_path: Path, toml: str = "") -> Path:
    files = {f"src/m{i}.py": "".join(f"def f{i}_{j}(x):\n    return x * {j}\n\n" for j in range(80)) for i in range(3)}
    if toml:
        files["cog.toml"] = toml
    return repo_with(tmp_path, files)


def script(n: int) -> list[Reply]:
    return [Reply(f"Reading m{i}.", [ToolCall(f"call_{i}", "read_file", {"path": f"src/m{i}.py"})]) for i in range(n)] + [Reply("All read.")]


def test_a_run_reports_cache_counts_and_cost_in_finish_and_its_cassette_replays_them(tmp_path: Path) -> None:
    repo = repo_for_run(tmp_path)
    cassette = tmp_path / "run.jsonl"
    with AnthropicCacheServer(script(3)) as srv:
        env = {"ANTHROPIC_BASE_URL": srv.base_url, "ANTHROPIC_API_KEY": "sk-ant-test"}
        out = run_cog(["edit", "--json", "--yes", "--sandbox", "off", "--model", "anthropic:claude-sonnet-4-5", "--record", str(cassette), "Read the modules"], repo, env=env)
    assert out.returncode == 0, out.stderr
    usage = json_lines(out.stdout)[-1]["usage"]
    assert usage["inputTokens"] == sum(b.total for b in srv.bills)
    assert usage["cachedInputTokens"] == sum(b.read for b in srv.bills) > usage["inputTokens"] / 2
    assert usage["cacheWriteTokens"] == sum(b.written for b in srv.bills)
    assert usage["costUsd"] > 0
    replay = run_cog(["edit", "--json", "--yes", "--sandbox", "off", "--model", f"replay:{cassette}", "Read the modules"], repo)
    assert replay.returncode == 0, replay.stderr
    replayed = json_lines(replay.stdout)
    assert replayed[-1]["usage"] == usage
    summary = RunSummary()
    summary.add(FinishEvent.model_validate(replayed[-1]))
    assert f"({usage['cachedInputTokens']:,} cache read, {usage['cacheWriteTokens']:,} cache write)" in summary.line()


def test_a_run_sends_its_thread_id_as_prompt_cache_key_when_asked(tmp_path: Path) -> None:
    repo = repo_for_run(tmp_path, "prompt_cache_key = true\n")
    with OpenAICacheServer(script(2)) as srv:
        env = {"OPENAI_BASE_URL": srv.base_url, "OPENAI_API_KEY": "sk-test"}
        out = run_cog(["edit", "--json", "--yes", "--sandbox", "off", "--model", "openai:some-local-model", "Read the modules"], repo, env=env)
    assert out.returncode == 0, out.stderr
    events = json_lines(out.stdout)
    thread = events[0]["threadId"]
    assert [r.body["prompt_cache_key"] for r in srv.requests] == [thread] * 3
    usage = events[-1]["usage"]
    assert usage["cachedInputTokens"] == sum(b.read for b in srv.bills) > 0
    assert "costUsd" not in usage  # a model cog has no price for: unknown, never guessed
