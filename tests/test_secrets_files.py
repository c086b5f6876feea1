"""Secret-looking files (issue 9 §3): read_file and edit_file refuse them with SECRET_FILE naming
--allow-secret, search_text and list_files leave them out and count them, write_file will not
replace one; --allow-secret and [tool.cog] secret_globs through the real `cog tool`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from cli_helpers import json_lines, run_cog

from cogcli.contract.errors import ErrorCode
from cogcli.contract.invoke import ToolResult, invoke_tool
from workspace_tools import workspace_tools
from workspace_tools.workspace.secret_files import SecretPolicy

ENV_TEXT = "DATABASE_URL=postgres://app:pw-in-env-file@db/app\n"


def call(root: Path, name: str, args: dict[str, Any], **options: Any) -> ToolResult:
    tools = workspace_tools(root, include_git=False, sandbox="off", **options)
    return anyio.run(lambda: invoke_tool(name, args, tools=tools))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "app").mkdir(parents=True)
    (root / "app" / "main.py").write_text("DATABASE = 'from env'\n", encoding="utf-8")
    (root / ".env").write_text(ENV_TEXT, encoding="utf-8")
    (root / "app" / ".env.local").write_text("DATABASE=local-secret-value\n", encoding="utf-8")
    (root / "certs").mkdir()
    (root / "certs" / "server.pem").write_text("DATABASE pem body\n", encoding="utf-8")
    (root / ".ssh").mkdir()
    (root / ".ssh" / "config").write_text("Host DATABASE\n", encoding="utf-8")
    return root


@pytest.mark.parametrize(
    "path",
    [".env", ".env.production", "sub/.env", "KEY.PEM", "tls/server.key", "id_rsa", "id_rsa.pub", "home/id_ed25519", ".ssh/id_ecdsa", "id_dsa",
     ".netrc", ".pypirc", "web/.npmrc", ".aws/credentials", "deploy/.ssh/known_hosts", ".ssh/config"],
)
def test_built_in_globs_match_any_folder_and_ignore_case(path: str) -> None:
    assert SecretPolicy().is_secret(path)


@pytest.mark.parametrize("path", ["env.py", "src/environment.ts", "keys.py", "docs/ssh.md", "aws/handler.py", "a.pem.txt", "netrc.md"])
def test_ordinary_files_are_not_secrets(path: str) -> None:
    assert not SecretPolicy().is_secret(path)


def test_user_globs_and_allowed_paths() -> None:
    policy = SecretPolicy(globs=("config/*.secret.json", "*.tfvars", "vault/"), allowed=(".env.example", "certs"))
    assert policy.is_secret("config/db.secret.json") and not policy.is_secret("other/config/db.secret.json")
    assert policy.is_secret("infra/prod.tfvars") and policy.is_secret("vault/token")
    assert not policy.is_secret(".env.example") and policy.is_secret(".env.local")
    assert not policy.is_secret("certs/server.pem") and policy.matches("certs/server.pem")


def test_read_file_refuses_a_secret_naming_allow_secret(repo: Path) -> None:
    for path in (".env", "app/.env.local", "certs/server.pem", ".ssh/config", "./app/../.env", str(repo / ".env")):
        result = call(repo, "read_file", {"path": path})
        assert result.error_code == ErrorCode.SECRET_FILE, (path, result)
        assert "--allow-secret" in result.error
        assert "pw-in-env-file" not in result.model_text() and "local-secret-value" not in result.model_text()


def test_a_symlink_to_a_secret_is_refused_by_read_and_search(repo: Path) -> None:
    (repo / "settings.txt").symlink_to(".env")
    result = call(repo, "read_file", {"path": "settings.txt"})
    assert result.error_code == ErrorCode.SECRET_FILE and "--allow-secret .env" in result.error
    found = call(repo, "search_text", {"pattern": "DATABASE"})
    assert "pw-in-env-file" not in found.model_text()
    assert found.details["secrets_skipped"] == 5  # .env, .env.local, server.pem, .ssh/config, and the link


def test_allow_secret_lets_the_tools_read_exactly_that_path(repo: Path) -> None:
    result = call(repo, "read_file", {"path": ".env"}, allow_secrets=[".env"])
    # the file opens; a credential inside it is still redacted before anyone sees it
    assert result.ok and "DATABASE_URL=postgres://app:[REDACTED]@db/app" in result.result
    assert "pw-in-env-file" not in result.result and result.redacted == 1
    other = call(repo, "read_file", {"path": "app/.env.local"}, allow_secrets=[".env"])
    assert other.error_code == ErrorCode.SECRET_FILE


def test_search_skips_secrets_and_says_how_many(repo: Path) -> None:
    result = call(repo, "search_text", {"pattern": "DATABASE"})
    assert result.ok
    assert [m["path"] for m in result.details["matches"]] == ["app/main.py"]
    assert result.details["secrets_skipped"] == 4
    assert "4 files that look like secrets" in result.result
    direct = call(repo, "search_text", {"pattern": "DATABASE", "path": ".env"})
    assert direct.error_code == ErrorCode.SECRET_FILE and "--allow-secret .env" in direct.error
    allowed = call(repo, "search_text", {"pattern": "DATABASE"}, allow_secrets=[".env"])
    assert sorted(m["path"] for m in allowed.details["matches"]) == [".env", "app/main.py"]
    assert allowed.details["secrets_skipped"] == 3


def test_list_files_leaves_secrets_out_and_counts_them(repo: Path) -> None:
    result = call(repo, "list_files", {})
    assert result.details["files"] == ["app/main.py"]
    assert result.details["secrets_skipped"] == 4
    assert ".env" not in result.result.replace("(.env, keys)", "")


def test_edit_refuses_a_secret_and_leaves_it_as_it_was(repo: Path) -> None:
    result = call(repo, "edit_file", {"path": ".env", "old_text": "nothing like this", "new_text": "x"})
    assert result.error_code == ErrorCode.SECRET_FILE
    assert "pw-in-env-file" not in result.model_text()  # no "closest lines" shown from the file
    assert (repo / ".env").read_text(encoding="utf-8") == ENV_TEXT


def test_write_creates_a_new_secret_looking_file_but_never_replaces_one(repo: Path) -> None:
    made = call(repo, "write_file", {"path": ".env.example", "content": "DATABASE_URL=\n"})
    assert made.ok and (repo / ".env.example").read_text(encoding="utf-8") == "DATABASE_URL=\n"
    replaced = call(repo, "write_file", {"path": ".env", "content": "oops\n"})
    assert replaced.error_code == ErrorCode.SECRET_FILE
    assert (repo / ".env").read_text(encoding="utf-8") == ENV_TEXT


def test_cog_tool_allow_secret_and_config_secret_globs(repo: Path) -> None:
    (repo / "pyproject.toml").write_text('[tool.cog]\nsecret_globs = ["app/main.py"]\n', encoding="utf-8")
    refused = run_cog(["tool", "-C", ".", "read_file", "path=app/main.py", "--json", "--sandbox", "off"], repo)
    result = json_lines(refused.stdout)[-1]
    assert refused.returncode == 1, refused.stderr
    assert result["errorCode"] == "SECRET_FILE" and "--allow-secret app/main.py" in result["error"]

    refused_env = run_cog(["tool", "-C", ".", "read_file", "path=.env", "--json", "--sandbox", "off"], repo)
    assert json_lines(refused_env.stdout)[-1]["errorCode"] == "SECRET_FILE"

    allowed = run_cog(
        ["tool", "-C", ".", "read_file", "path=.env", "--allow-secret", ".env", "--allow-secret", "app/main.py", "--json", "--sandbox", "off"],
        repo,
    )
    assert allowed.returncode == 0, allowed.stderr
    shown = json.dumps(json_lines(allowed.stdout)[-1]["result"])
    assert "DATABASE_URL" in shown and "pw-in-env-file" not in shown


def test_secret_check_follows_the_resolved_path_not_only_the_name(repo: Path) -> None:
    os.symlink(repo / ".ssh", repo / "dotssh")
    result = call(repo, "read_file", {"path": "dotssh/config"})
    assert result.error_code == ErrorCode.SECRET_FILE
