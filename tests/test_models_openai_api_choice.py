"""Which API ``openai:`` speaks: the Responses API at api.openai.com, Chat Completions at any other
base URL unless the person says the server speaks Responses (``[providers.openai] api =
"responses"`` in their config, or ``COG_OPENAI_API=responses``); a bad value names the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import repo_with

from cogcli.contract.errors import ConfigError
from cogcli.models import get_model
from cogcli.models.openai_responses import OpenAIResponsesModel
from cogcli.session.factory import make_model
from cogcli.settings.load import load_settings


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COG_OPENAI_API"):
        monkeypatch.delenv(var, raising=False)


def person(tmp_path: Path, text: str) -> dict[str, str]:
    home = tmp_path / "xdg"
    (home / "cog").mkdir(parents=True, exist_ok=True)
    (home / "cog" / "config.toml").write_text(text, encoding="utf-8")
    return {"XDG_CONFIG_HOME": str(home)}


def test_openais_own_api_speaks_responses_and_another_server_chat_completions() -> None:
    own = get_model("openai:gpt-5.2", api_key="sk-test")
    assert isinstance(own, OpenAIResponsesModel) and own.url == "https://api.openai.com/v1/responses"
    local = get_model("openai:qwen3", base_url="http://127.0.0.1:8000/v1")
    assert not isinstance(local, OpenAIResponsesModel) and local.url == "http://127.0.0.1:8000/v1/chat/completions"
    assert get_model("openai:gpt-4o", api_key="sk-test", api="chat").url == "https://api.openai.com/v1/chat/completions"
    assert get_model("ollama:llama3.1", api="responses").url.endswith("/chat/completions")  # Ollama's client is Chat Completions


def test_the_variable_wins_over_the_persons_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COG_OPENAI_API", "responses")
    assert get_model("openai:gpt-oss", base_url="http://127.0.0.1:8000/v1", api="chat").url == "http://127.0.0.1:8000/v1/responses"
    monkeypatch.setenv("COG_OPENAI_API", "completions")
    with pytest.raises(ConfigError, match="COG_OPENAI_API must be responses or chat, got 'completions'"):
        get_model("openai:gpt-5.2", api_key="sk-test")


def test_the_persons_config_says_a_server_speaks_responses(tmp_path: Path) -> None:
    env = person(tmp_path, '[providers.openai]\nbase_url = "http://127.0.0.1:8000/v1"\napi = "responses"\n')
    settings = load_settings(repo_with(tmp_path, {}), environ={**env, "COG_MODEL": "openai:gpt-oss-120b"})
    assert settings.provider_apis == {"openai": "responses"}
    model = make_model(settings)
    assert isinstance(model, OpenAIResponsesModel) and model.url == "http://127.0.0.1:8000/v1/responses"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('[providers.openai]\napi = "graphql"\n', "providers.openai.api in .*config.toml: Input should be 'responses' or 'chat'"),
        ('[providers.anthropic]\napi = "responses"\n', r"api is a setting of \[providers.openai\] only; remove it from \[providers.anthropic\]"),
    ],
)
def test_a_bad_api_in_the_config_names_the_file_and_the_fix(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        load_settings(repo_with(tmp_path, {}), environ=person(tmp_path, text))


def test_cog_config_says_which_api_and_where_that_came_from(tmp_path: Path) -> None:
    import json

    from cli_helpers import run_cog

    repo = repo_with(tmp_path, {})
    env = person(tmp_path, '[providers.openai]\nbase_url = "http://127.0.0.1:9/v1"\napi = "responses"\n')
    data = json.loads(run_cog(["config", "--json"], repo, env=env).stdout)["settings"]
    assert data["provider_apis"]["value"] == {"openai": "responses"} and data["provider_apis"]["from"].endswith("config.toml")
    data = json.loads(run_cog(["config", "--json"], repo, env={**env, "COG_OPENAI_API": "chat"}).stdout)["settings"]
    assert data["provider_apis"] == {"value": {"openai": "chat"}, "from": "COG_OPENAI_API"}
