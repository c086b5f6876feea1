"""Prices and context windows from genai-prices (issue 48): its real data for current models,
cog's own table for a model it lacks, unknown stays unknown, cache prices as the providers bill
them through both clients, long-context tiers, and the cost budget's rules on top of it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from cli_helpers import repo_with, run_cog

from cogcli.contract.errors import ConfigError
from cogcli.loop.budgets import budget_prices, check_cost_budget
from cogcli.models import get_model
from cogcli.models.context import known_window
from cogcli.settings import prices as prices_module
from cogcli.settings.price_data import maintained_model, maintained_window
from cogcli.settings.prices import PRICES, Price, cost_usd, price_of

genai_prices = pytest.importorskip("genai_prices")

#: current models of each maker cog speaks to: (cog's spec, genai-prices' provider, its name)
CURRENT = [
    ("anthropic:claude-opus-4-6", "anthropic", "claude-opus-4-6"),
    ("anthropic:claude-sonnet-4-5-20250929", "anthropic", "claude-sonnet-4-5-20250929"),
    ("anthropic:claude-haiku-4-5", "anthropic", "claude-haiku-4-5"),
    ("openai:gpt-5.2", "openai", "gpt-5.2"),
    ("openai:gpt-5-mini", "openai", "gpt-5-mini"),
    ("openai:gemini-3-pro-preview", "google", "gemini-3-pro-preview"),  # Google's OpenAI-compatible endpoint
]


def _theirs(provider: str, name: str, **tokens: int) -> float:
    """genai-prices' own price of a request (its API, not cog's reading of its data)."""
    usage = genai_prices.Usage(**tokens)
    return float(genai_prices.calc_price(usage, name, provider_id=provider).total_price)


@pytest.mark.parametrize(("spec", "provider", "name"), CURRENT)
def test_current_models_are_priced_as_genai_prices_prices_them(spec: str, provider: str, name: str) -> None:
    price = price_of(spec)
    assert price is not None, spec
    tokens = {"input_tokens": 40_000, "cache_read_tokens": 30_000, "output_tokens": 2_000}
    ours = cost_usd(price, input_tokens=40_000, output_tokens=2_000, cache_read_tokens=30_000)
    assert ours == pytest.approx(_theirs(provider, name, **tokens), rel=1e-9)
    # the numbers are genai-prices' own
    listed = maintained_model(provider, name).get_prices(datetime.now(tz=UTC))
    assert price.input == float(getattr(listed.input_mtok, "base", listed.input_mtok))
    assert price.output == float(getattr(listed.output_mtok, "base", listed.output_mtok))


def test_a_long_request_is_billed_at_the_long_context_tier_as_genai_prices_bills_it() -> None:
    price = price_of("anthropic:claude-sonnet-4-5")
    assert price is not None and price.tiers and price.tiers[0][0] == 200_000
    for total in (150_000, 250_000):
        tokens = {"input_tokens": total, "cache_read_tokens": 100_000, "cache_write_tokens": 10_000, "output_tokens": 1_000}
        ours = cost_usd(price, input_tokens=total, output_tokens=1_000, cache_read_tokens=100_000, cache_write_tokens=10_000)
        assert ours == pytest.approx(_theirs("anthropic", "claude-sonnet-4-5", **tokens), rel=1e-9)


def test_a_model_genai_prices_lacks_falls_back_to_cogs_table(monkeypatch: pytest.MonkeyPatch) -> None:
    name = "gpt-5.3-codex-spark"  # not in the genai-prices this suite runs with
    assert maintained_model("openai", name) is None
    assert price_of(f"openai:{name}") is None
    mine = Price(input=1.5, output=6.0, cache_read=0.15, cache_write=1.5)
    monkeypatch.setitem(PRICES, name, mine)
    assert price_of(f"openai:{name}") == mine and price_of(f"openai:{name}-2026-01-15") == mine
    # and a model both know: genai-prices wins
    monkeypatch.setitem(PRICES, "gpt-5.2", mine)
    assert price_of("openai:gpt-5.2") == prices_module.maintained_price("openai", "gpt-5.2") != mine


def test_an_unknown_model_has_an_unknown_cost() -> None:
    for spec in ("openai:my-finetune", "anthropic:claude-sonnet-9", "ollama:gpt-5.2", "openai:llama3.1", "replay:x.jsonl"):
        assert price_of(spec) is None, spec
        assert cost_usd(price_of(spec), input_tokens=10, output_tokens=1) is None


def test_anthropic_cache_reads_and_both_writes_are_billed_at_genai_prices_rates() -> None:
    model = get_model("anthropic:claude-opus-4-6", base_url="http://127.0.0.1:9", api_key="k")
    usage = {
        "input_tokens": 1_000, "cache_read_input_tokens": 20_000, "cache_creation_input_tokens": 3_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 2_000, "ephemeral_1h_input_tokens": 1_000},
    }
    report = model.usage_report(usage, 500)
    price = price_of("anthropic:claude-opus-4-6")
    assert (price.input, price.cache_read, price.cache_write, price.cache_write_1h, price.output) == (5.0, 0.5, 6.25, 10.0, 25.0)
    expected = (1_000 * 5.0 + 20_000 * 0.5 + 2_000 * 6.25 + 1_000 * 10.0 + 500 * 25.0) / 1e6
    assert report.cost_usd == pytest.approx(expected)
    assert report.cost_usd == pytest.approx(
        _theirs("anthropic", "claude-opus-4-6", input_tokens=24_000, cache_read_tokens=20_000, cache_write_tokens=3_000, output_tokens=500)
        + 1_000 * (10.0 - 6.25) / 1e6  # genai-prices' Usage has no 1-hour split: the hour's writes cost 2×, not 1.25×
    )


def test_openai_cached_input_is_billed_at_genai_prices_cached_rate() -> None:
    model = get_model("openai:gpt-5.2", base_url="http://127.0.0.1:9", api_key="k")
    report = model.usage_report({"prompt_tokens": 50_000, "completion_tokens": 800, "prompt_tokens_details": {"cached_tokens": 45_000}})
    assert report.cost_usd == pytest.approx(_theirs("openai", "gpt-5.2", input_tokens=50_000, cache_read_tokens=45_000, output_tokens=800))
    assert price_of("openai:gpt-5.2").cache_write == price_of("openai:gpt-5.2").input  # OpenAI's cache writes are free


def test_windows_come_from_genai_prices_then_cogs_table() -> None:
    assert known_window("anthropic:claude-opus-4-6") == maintained_window("anthropic", "claude-opus-4-6") is not None
    assert known_window("openai:gpt-5.2") == maintained_window("openai", "gpt-5.2") == 400_000
    assert maintained_window("google", "gemini-3-pro-preview") is None  # genai-prices has none: cog's table
    assert known_window("openai:gemini-3-pro-preview") == 1_048_576
    assert known_window("openai:qwen3-coder") == 262_144 and known_window("ollama:gpt-5.2") is None


def test_a_cost_budget_uses_genai_prices_and_is_refused_up_front_without_a_price(tmp_path: Path) -> None:
    check_cost_budget("openai:gpt-5.2", {})
    check_cost_budget("anthropic:claude-sonnet-4-6", {})
    with pytest.raises(ConfigError, match=r'\[prices\."gpt-5.3-codex-spark"\]'):
        check_cost_budget("openai:gpt-5.3-codex-spark", {})
    out = run_cog(["edit", "--model", "openai:gpt-5.3-codex-spark", "--max-cost", "0.5", "Fix add"], repo_with(tmp_path, {"a.py": "x = 1\n"}))
    assert out.returncode == 2 and "--max-cost needs the price of openai:gpt-5.3-codex-spark" in out.stderr


def test_a_workspace_price_below_genai_prices_is_ignored_by_a_cost_budget() -> None:
    cheap = Price(0.01, 0.01, 0.0, 0.0)
    kept = budget_prices("anthropic:claude-opus-4-6", {"claude-opus-4-6": cheap})
    assert "claude-opus-4-6" not in kept
    assert price_of("anthropic:claude-opus-4-6", kept) == prices_module.maintained_price("anthropic", "claude-opus-4-6")
    dearer = Price(6.0, 30.0, 1.0, 7.0)
    assert budget_prices("anthropic:claude-opus-4-6", {"claude-opus-4-6": dearer}) == {"claude-opus-4-6": dearer}
