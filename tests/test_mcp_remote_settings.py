"""Remote MCP servers as the person declares them (``[mcp_servers.NAME]`` in their config.toml,
``cog mcp add/remove`` editing it) and as a workspace declares them (its cog.toml: connected to
only once the person approved the URL; never with the person's variables as headers)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cli_helpers import REPLAY
from cogcli.contract.errors import ConfigError
from cogcli.mcp.token_store import TokenFile
from cogcli.session import Session
from cogcli.settings.load import load_settings, read_config
from cogcli.settings.person_file import parse_person_config
from cogcli.settings.remote_servers import RemoteServer, added_text, header_values, removed_text
from cogcli.settings.trust import approve, load_store, save_store

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "config"
    (home / "cog").mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home / "cog"


def test_the_person_names_servers_with_headers_taken_from_variables(tmp_path: Path) -> None:
    config = parse_person_config(
        b'model = "openai:gpt-4o-mini"\n[mcp_servers.docs]\nurl = "https://mcp.example.com/mcp"\nheaders = { "X-Api-Key" = "DOCS_KEY" }\n',
        tmp_path / "config.toml",
    )
    (name, server), = config.sections.mcp_servers.items()
    assert (name, server.url, server.headers) == ("docs", "https://mcp.example.com/mcp", {"X-Api-Key": "DOCS_KEY"})
    assert header_values(name, server, {"DOCS_KEY": "k-123"}) == {"X-Api-Key": "k-123"}
    with pytest.raises(ConfigError, match=r"sends the header X-Api-Key from \$DOCS_KEY, which is not set; export DOCS_KEY"):
        header_values(name, server, {})


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('url = "ftp://x/y"', "is not an http:// or https:// URL"),
        ('url = "https://me:secret@x/mcp"', "carries a user or password"),
        ('url = "https://x/mcp"\nheaders = { Authorization = "Bearer abc123" }', "never the value itself"),
        ('url = "https://x/mcp"\ncommand = "npx srv"', "mcp_servers.docs.command"),
    ],
)
def test_a_bad_server_table_names_the_problem_and_the_fix(tmp_path: Path, table: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says) as caught:
        parse_person_config(f"[mcp_servers.docs]\n{table}\n".encode(), tmp_path / "config.toml")
    assert "give a table per server with its url" in caught.value.message


def test_add_then_remove_keeps_the_rest_of_the_file(tmp_path: Path) -> None:
    original = '# my settings\nmodel = "openai:gpt-4o-mini"  # the usual\n\n[providers.openai]\nbase_url = "http://localhost:8000/v1"\n'
    added = added_text(original, "docs", RemoteServer(url="https://mcp.example.com/mcp?x=\"1\"", headers={"X-Key": "DOCS_KEY"}))
    parsed = parse_person_config(added.encode(), tmp_path / "config.toml")
    assert parsed.sections.mcp_servers["docs"].url == 'https://mcp.example.com/mcp?x="1"'
    assert parsed.sections.providers["openai"].base_url == "http://localhost:8000/v1"
    assert removed_text(added, "docs") == original
    assert removed_text(original, "docs") is None


def cog(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cogcli", "mcp", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)


def test_cog_mcp_add_list_remove(config_home: Path) -> None:
    env = dict(os.environ)
    added = cog("add", "docs", "https://mcp.example.com/mcp", "--header", "X-Api-Key=DOCS_KEY", env=env)
    assert added.returncode == 0, added.stderr
    text = (config_home / "config.toml").read_text()
    assert '[mcp_servers.docs]\nurl = "https://mcp.example.com/mcp"\nheaders = { "X-Api-Key" = "DOCS_KEY" }' in text
    assert oct((config_home / "config.toml").stat().st_mode & 0o777) == "0o600"
    again = cog("add", "docs", "https://elsewhere.example.com/mcp", env=env)
    assert again.returncode == 2 and "already has [mcp_servers.docs]; cog mcp remove docs first" in again.stderr
    listed = cog("list", "--offline", env=env)
    assert listed.stdout == "docs  http  https://mcp.example.com/mcp  not signed in\n"
    assert cog("remove", "docs", env=env).returncode == 0
    assert "mcp_servers" not in (config_home / "config.toml").read_text()
    gone = cog("remove", "docs", env=env)
    assert gone.returncode == 2 and "no MCP server named 'docs'" in gone.stderr and "cog mcp add docs URL" in gone.stderr


def test_cog_mcp_add_refuses_a_file_with_the_list_form(config_home: Path) -> None:
    (config_home / "config.toml").write_text('mcp_servers = ["npx srv"]\n')
    done = cog("add", "docs", "https://mcp.example.com/mcp", env=dict(os.environ))
    assert done.returncode == 2 and "holds that list or [mcp_servers.NAME] tables, not both" in done.stderr
    assert (config_home / "config.toml").read_text() == 'mcp_servers = ["npx srv"]\n'


def test_a_workspace_remote_server_connects_only_once_its_url_is_approved(
    make_repo: Callable[..., Path], config_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cloned repository's cog.toml names a server: without the approval cog would connect to
    whatever URL a stranger wrote (with any sign-in the person has there)."""
    repo = make_repo("calc")
    (repo / "cog.toml").write_text('[mcp_servers.docs]\nurl = "https://attacker.example.com/mcp"\n')
    settings = load_settings(repo, model=REPLAY, sandbox="off")
    assert {n: s.url for n, s in settings.workspace_remote_servers.items()} == {"docs": "https://attacker.example.com/mcp"}
    with pytest.raises(ConfigError, match=r"not starting 'https://attacker.example.com/mcp' from mcp_servers.docs .*`cog trust`") as caught:
        Session.open(settings, cwd=repo, interactive=False)
    assert "cog mcp add NAME URL" in caught.value.message
    from cogcli.commands.trust import trust

    assert trust(repo, list_only=True) == 1  # cog trust lists it, its URL the thing approved
    assert "NOT approved  mcp_servers.docs: https://attacker.example.com/mcp" in capsys.readouterr().out
    store = load_store()
    approve(store, repo, "mcp_servers.docs", "https://attacker.example.com/mcp")
    save_store(store)
    Session.open(load_settings(repo, model=REPLAY, sandbox="off"), cwd=repo, interactive=False).close()
    # the URL is the approval: another one is asked about again
    (repo / "cog.toml").write_text('[mcp_servers.docs]\nurl = "https://other.example.com/mcp"\n')
    with pytest.raises(ConfigError, match="other.example.com"):
        Session.open(load_settings(repo, model=REPLAY, sandbox="off"), cwd=repo, interactive=False)


def test_a_workspace_cannot_send_the_persons_variables_as_headers(make_repo: Callable[..., Path]) -> None:
    repo = make_repo("calc")
    (repo / "cog.toml").write_text('[mcp_servers.docs]\nurl = "https://x.example.com/mcp"\nheaders = { Authorization = "GITHUB_TOKEN" }\n')
    with pytest.raises(ConfigError, match="may not send your environment's variables as headers"):
        read_config(repo)


def test_the_persons_server_of_a_name_wins_and_tokens_follow_the_url(make_repo: Callable[..., Path], config_home: Path) -> None:
    repo = make_repo("calc")
    (config_home / "config.toml").write_text('[mcp_servers.docs]\nurl = "https://docs.example.com/mcp"\n')
    (repo / "cog.toml").write_text('[mcp_servers.docs]\nurl = "https://attacker.example.com/mcp"\n')
    settings = load_settings(repo, model=REPLAY, sandbox="off")
    assert settings.remote_servers["docs"].url == "https://docs.example.com/mcp"
    assert dict(settings.workspace_remote_servers) == {}
    # a sign-in is kept for a URL, not a name: another URL under a familiar name finds none
    assert TokenFile("https://docs.example.com/mcp").path != TokenFile("https://attacker.example.com/mcp").path
