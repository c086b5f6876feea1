"""get_model(): provider:model strings, keys and base URLs from flags or env, lazy imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cogcli.contract.errors import ConfigError
from cogcli.models import Model, get_model, parse_model_spec
from cogcli.models.anthropic import AnthropicModel
from cogcli.models.openai import OpenAIModel
from cogcli.models.replay import ReplayModel

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "cassettes" / "calc_fix.jsonl"
KEY = "sk-test-0123456789abcdef"


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def test_spec_parsing() -> None:
    assert parse_model_spec("openai:gpt-4o") == ("openai", "gpt-4o")
    assert parse_model_spec("Ollama:qwen2.5-coder:7b") == ("ollama", "qwen2.5-coder:7b")  # tags keep their colon
    assert parse_model_spec("replay:C:/runs/a.jsonl") == ("replay", "C:/runs/a.jsonl")


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", ":gpt-4o", ""])
def test_malformed_spec_says_how_to_write_one(spec: str) -> None:
    with pytest.raises(ConfigError, match="provider:model, e.g. openai:gpt-4o"):
        get_model(spec)


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as info:
        get_model("gemini:pro")
    assert "'gemini'" in info.value.message
    for provider in ("openai", "ollama", "anthropic", "replay"):
        assert provider in info.value.message
    assert info.value.code == "MODEL_CONFIG_ERROR"


def test_openai_needs_a_key_only_for_api_openai_com(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY"):
        get_model("openai:gpt-4o")
    local = get_model("openai:qwen", base_url="http://127.0.0.1:8000/v1")
    assert isinstance(local, OpenAIModel) and local.url == "http://127.0.0.1:8000/v1/chat/completions"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:1234/v1/")
    assert get_model("openai:qwen").url == "http://localhost:1234/v1/chat/completions"
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    model = get_model("openai:gpt-4o")
    assert model.name == "openai:gpt-4o" and model.url == "https://api.openai.com/v1/responses"  # OpenAI's own API: Responses
    assert KEY not in repr(model)


def test_anthropic_needs_a_key_only_for_api_anthropic_com(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="set ANTHROPIC_API_KEY"):
        get_model("anthropic:claude-sonnet-4-5")
    model = get_model("anthropic:claude-sonnet-4-5", api_key=KEY)
    assert isinstance(model, AnthropicModel) and model.url == "https://api.anthropic.com/v1/messages"
    assert KEY not in repr(model)


def test_ollama_defaults_to_localhost_without_a_key() -> None:
    model = get_model("ollama:llama3.1")
    assert isinstance(model, OpenAIModel) and model.model == "llama3.1"
    assert model.url == "http://localhost:11434/v1/chat/completions"


def test_bad_base_url_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="from base_url"):
        get_model("ollama:llama3.1", base_url="localhost:11434")
    monkeypatch.setenv("OPENAI_BASE_URL", "ftp://x")
    with pytest.raises(ConfigError, match="from OPENAI_BASE_URL"):
        get_model("openai:gpt-4o", api_key=KEY)


def test_replay_models_and_every_client_satisfy_the_protocol() -> None:
    replay = get_model(f"replay:{DEMO}")
    assert isinstance(replay, ReplayModel) and replay.name == f"replay:{DEMO}"
    for model in (replay, get_model("ollama:x"), get_model("anthropic:x", api_key=KEY)):
        assert isinstance(model, Model)


def test_importing_the_models_package_or_replaying_does_not_import_httpx() -> None:
    code = (
        "import sys, cogcli.models as m; assert 'httpx' not in sys.modules, 'at import';"
        f"m.get_model('replay:{DEMO.as_posix()}'); assert 'httpx' not in sys.modules, 'replay';"
        "m.get_model('ollama:x'); assert 'httpx' not in sys.modules, 'client made';"
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
