"""The test environment's allow-list: what a test process gets from cog's environment."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workspace_tools.sandbox.hints import failure_hint
from workspace_tools.sandbox.environment import child_environment, is_credential_name

HOST = {
    "PATH": "/usr/bin", "HOME": "/home/me", "LANG": "C.UTF-8", "LC_ALL": "C", "VIRTUAL_ENV": "/v", "CI": "1",
    "OPENAI_API_KEY": "sk-x", "ANTHROPIC_API_KEY": "sk-ant-x", "GH_TOKEN": "ghp_x", "GITHUB_TOKEN": "ghs_x",
    "DB_PASSWORD": "pw", "AWS_SECRET_ACCESS_KEY": "aws", "AWS_REGION": "eu", "MY_SERVICE_TOKEN": "t",
    "SSH_AUTH_SOCK": "/run/agent", "RANDOM_THING": "r", "DATABASE_URL": "postgres://u:p@h/db",
}


def test_only_allowed_names_pass_and_no_credential() -> None:
    env = child_environment({"PYTHONPATH": "/plugin"}, environ=HOST)
    assert env == {"PATH": "/usr/bin", "HOME": "/home/me", "LANG": "C.UTF-8", "LC_ALL": "C", "VIRTUAL_ENV": "/v",
                   "CI": "1", "PYTHONPATH": "/plugin"}


def test_the_person_may_pass_anything_the_workspace_no_credential(caplog: pytest.LogCaptureFixture) -> None:
    env = child_environment(environ={**HOST, "COG_PASS_ENV": "GH_TOKEN", "COG_WORKSPACE_PASS_ENV": "RANDOM_THING,OPENAI_API_KEY"})
    assert env["GH_TOKEN"] == "ghp_x" and env["RANDOM_THING"] == "r"
    assert "OPENAI_API_KEY" not in env
    assert "pass_env asks for OPENAI_API_KEY" in caplog.text and "--pass-env" in caplog.text
    assert "COG_PASS_ENV" not in env


@pytest.mark.parametrize(
    "name", ["OPENAI_API_KEY", "GH_TOKEN", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "SENTRY_DSN",
             "SLACK_WEBHOOK_URL", "NPM_CONFIG_USERCONFIG", "my_apikey", "HF_HOME", "SESSION_COOKIE", "X_AUTH",
             # words run together, which a split on "_" alone missed (a workspace's pass_env got them through)
             "PGPASSWORD", "SECRETKEY", "APITOKEN", "PASSPHRASE", "PRIVATEKEY", "GITHUB_PAT", "MYSQL_PWD_FILE"]
)
def test_credential_names(name: str) -> None:
    assert is_credential_name(name)


@pytest.mark.parametrize(
    "name", ["PATH", "PWD", "HOME", "LANG", "KEYBOARD_LAYOUT", "PYTHONHASHSEED", "TOKENIZERS_PARALLELISM", "PYTHONPATH", "PASSTHROUGH_MODE", "PATTERN_DIR"]
)
def test_not_credential_names(name: str) -> None:
    assert not is_credential_name(name)


@given(st.from_regex(r"[A-Z][A-Z0-9]{0,6}_(TOKEN|PASSWORD|SECRET|API_KEY)(_[A-Z0-9]{1,4})?", fullmatch=True), st.text(min_size=1, max_size=20))
def test_no_credential_named_variable_reaches_a_test(name: str, value: str) -> None:
    env = child_environment(environ={"PATH": "/bin", name: value, "COG_WORKSPACE_PASS_ENV": name})
    assert name not in env


def test_failure_hint_names_the_way_out() -> None:
    root = Path("/work/repo")
    hint = failure_hint(root, ["OSError: [Errno 30] Read-only file system: '/usr/lib/x'"])
    assert hint.startswith("Sandbox:") and "/usr/lib/x" in hint and "--sandbox off" in hint and "--sandbox-writable" in hint
    assert "name did not resolve" in failure_hint(root, ["socket.gaierror: [Errno -3] Temporary failure in name resolution"])
    assert failure_hint(root, ["PermissionError: [Errno 13] Permission denied: '/work/repo/a'"]) == ""
    assert failure_hint(root, ["AssertionError: 1 != 2"]) == ""
