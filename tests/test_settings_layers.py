"""One definition of the person's settings (issue 37): flags > environment > the person's
``~/.config/cog/config.toml`` > the workspace's ``cog.toml`` / ``[tool.cog]`` > defaults, each
setting checked the same way in every layer, every front end offering the flags that apply to it,
and ``cog config`` saying where each value came from."""

from __future__ import annotations

import json
import logging
import os
import pickle
from pathlib import Path

import pytest

from cli_helpers import repo_with, run_cog
from cogcli.settings.load import load_settings
from cogcli.contract.errors import ConfigError
from cogcli.settings.options import BY_NAME, SETTINGS, UNSET, SettingFlags, applies_to
from cogcli.settings.person_file import config_path, read_person_config


def person(tmp_path: Path, text: str) -> dict[str, str]:
    """An environment whose person's config holds ``text`` (outside any workspace)."""
    home = tmp_path / "xdg"
    (home / "cog").mkdir(parents=True, exist_ok=True)
    (home / "cog" / "config.toml").write_text(text, encoding="utf-8")
    return {"XDG_CONFIG_HOME": str(home)}


def test_each_layer_over_the_next(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"cog.toml": 'model = "ollama:ws"\nmax_steps = 7\ntimeout = 5\ncontext_window = 2048\n'})
    env = person(tmp_path, 'model = "ollama:person"\nmax_steps = 8\ntimeout = 6.5\n')
    s = load_settings(repo, environ=env)
    assert (s.model, s.max_steps, s.timeout, s.context_window) == ("ollama:person", 8, 6.5, 2048)
    label = "~/" + str(config_path(env).relative_to(Path.home())) if config_path(env).is_relative_to(Path.home()) else str(config_path(env))
    assert s.origins["model"] == label and s.origins["context_window"] == "cog.toml" and s.origins["approval"] == "default"
    s = load_settings(repo, environ={**env, "COG_MODEL": "ollama:env", "COG_MAX_STEPS": "9"})
    assert (s.model, s.max_steps, s.origins["model"], s.origins["max_steps"]) == ("ollama:env", 9, "COG_MODEL", "COG_MAX_STEPS")
    s = load_settings(repo, SettingFlags(model="ollama:flag"), environ={**env, "COG_MODEL": "ollama:env"})
    assert (s.model, s.model_source, s.max_steps) == ("ollama:flag", "--model", 8)
    # no person's config, no environment: the workspace's, then the defaults
    s = load_settings(repo, environ={"XDG_CONFIG_HOME": str(tmp_path / "none")})
    assert (s.model, s.max_steps, s.sandbox, s.origins["sandbox"]) == ("ollama:ws", 7, "auto", "default")


def test_the_person_may_turn_the_sandbox_off_and_start_mcp_servers_the_workspace_may_not(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    repo = repo_with(tmp_path, {"cog.toml": 'sandbox = "off"\nmcp_servers = ["from-workspace"]\n'})
    nobody = {"XDG_CONFIG_HOME": str(tmp_path / "none")}
    with caplog.at_level(logging.WARNING, logger="cogcli"):
        s = load_settings(repo, environ=nobody)
    assert s.sandbox == "auto" and "cannot turn the test sandbox off" in caplog.text
    assert s.mcp_servers == ["from-workspace"] and s.mcp_needs_approval
    env = person(tmp_path, 'sandbox = "off"\nmcp_servers = ["mine --flag"]\npass_env = ["MY_API_TOKEN"]\n')
    s = load_settings(repo, environ=env)
    assert s.sandbox == "off" and s.mcp_servers == ["mine --flag"] and not s.mcp_needs_approval
    assert s.pass_env == ("MY_API_TOKEN",)  # the person's: a credential name may pass


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("max_steps = 0\n", "max_steps in .*config.toml must be at least 1 and at most 10,000, got 0: give a whole number of steps"),
        ('timeout = "10"\n', "timeout in .*config.toml must be a number more than 0 and at most 86,400, got '10'"),
        ('sandbox = "maybe"\n', "sandbox in .*config.toml must be auto, on or off, got 'maybe': give auto, on or off"),
        ('pass_env = "A"\n', "pass_env in .*config.toml must be a list of texts"),
        ('test_command = "make"\n', "test_command in .*config.toml is not a setting of your config file: give it with --test-command"),
        ('[providers.openai]\nbase_url = "ftp://x"\n', "providers.openai.base_url in .*config.toml: 'ftp://x' is not an http:// or https:// URL"),
        ('[providers.nope]\nbase_url = "http://x"\n', "providers.nope.* in .*config.toml: Input should be 'openai', 'anthropic' or 'ollama'"),
        ("model = [\n", "config.toml is not valid TOML"),
    ],
)
def test_a_bad_value_names_the_file_the_key_and_the_fix(tmp_path: Path, text: str, says: str) -> None:
    env = person(tmp_path, text)
    with pytest.raises(ConfigError, match=says):
        load_settings(repo_with(tmp_path, {}), environ=env)


def test_unknown_keys_are_warned_about_and_big_files_refused(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    env = person(tmp_path, 'modle = "x"\n')
    with caplog.at_level(logging.WARNING, logger="cogcli"):
        assert read_person_config(environ=env).flags == SettingFlags()
    assert "unknown key 'modle'" in caplog.text and "is ignored: did you mean model?" in caplog.text
    caplog.clear()
    env = person(tmp_path, 'zzz = 1\nmax_steps = 0\nsandbox = "never"\napproval = "ask"\n')
    with caplog.at_level(logging.WARNING, logger="cogcli"), pytest.raises(ConfigError) as bad:
        read_person_config(environ=env)
    assert "unknown key 'zzz'" in caplog.text and "(known: model, " in caplog.text and "did you mean" not in caplog.text
    said = bad.value.message.splitlines()  # every bad value at once, a line each
    assert len(said) == 2 and said[0].startswith("max_steps in ") and said[1].startswith("sandbox in ")
    config_path(env).write_bytes(b"#" * (1024 * 1024 + 1))
    with pytest.raises(ConfigError, match="over 1 MiB"):
        read_person_config(environ=env)


def test_the_persons_config_is_never_read_from_the_workspace(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A config file in the workspace (XDG_CONFIG_HOME inside it) or a link from the person's
    config folder into the workspace: the model could have written it, so it is not read."""
    repo = repo_with(tmp_path, {"notes/config.toml": 'sandbox = "off"\nmcp_servers = ["evil"]\n'})
    inside = {"XDG_CONFIG_HOME": str(repo / "notes" / "x")}
    (repo / "notes" / "x" / "cog").mkdir(parents=True)
    (repo / "notes" / "x" / "cog" / "config.toml").write_text('sandbox = "off"\n')
    linked = tmp_path / "xdg"
    (linked / "cog").mkdir(parents=True)
    (linked / "cog" / "config.toml").symlink_to(repo / "notes" / "config.toml")
    with caplog.at_level(logging.WARNING, logger="cogcli"):
        for env in (inside, {"XDG_CONFIG_HOME": str(linked)}):
            s = load_settings(repo, environ=env)
            assert s.sandbox == "auto" and s.mcp_servers == [] and s.person_config is None
    assert caplog.text.count("is not read: it is in the workspace") == 2
    # the same link, read for another workspace: the person's file, links and all
    other = tmp_path / "other"
    other.mkdir()
    s = load_settings(other, environ={"XDG_CONFIG_HOME": str(linked)})
    assert s.sandbox == "off" and s.mcp_servers == ["evil"] and not s.mcp_needs_approval


def test_xdg_config_home_is_respected_when_absolute(tmp_path: Path) -> None:
    assert config_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "cog" / "config.toml"
    assert config_path({"XDG_CONFIG_HOME": "relative", "HOME": str(tmp_path)}) == tmp_path / ".config" / "cog" / "config.toml"
    assert config_path({"HOME": str(tmp_path)}) == tmp_path / ".config" / "cog" / "config.toml"


def test_flags_are_checked_as_every_other_layer(tmp_path: Path) -> None:
    nobody = {"XDG_CONFIG_HOME": str(tmp_path / "none")}
    with pytest.raises(ConfigError, match="--timeout must be more than 0"):
        load_settings(tmp_path, SettingFlags(timeout=0), environ=nobody)
    with pytest.raises(ConfigError, match="--yes means --approval auto; it cannot go with --approval stdin"):
        load_settings(tmp_path, SettingFlags(yes=True, approval="stdin"), environ=nobody)
    s = load_settings(tmp_path, SettingFlags(yes=True), environ={**nobody, "COG_APPROVAL": "ask"})
    assert (s.approval, s.origins["approval"]) == ("auto", "--yes")
    assert load_settings(tmp_path, environ={**nobody, "COG_APPROVAL": "stdin"}).approval == "stdin"
    s = load_settings(tmp_path, SettingFlags(instructions=False), environ=nobody)
    assert s.instruction_budget == 0 and s.origins["instructions"] == "--instructions"


def test_setting_flags_merge_over_unset_and_survive_pickling() -> None:
    high, low = SettingFlags(model="a:b", pass_env=["X"]), SettingFlags(model="c:d", timeout=3.0)
    merged = high.merge(low)
    assert (merged.model, merged.timeout, merged.pass_env, merged.sandbox) == ("a:b", 3.0, ("X",), UNSET)
    assert pickle.loads(pickle.dumps(merged)) == merged and pickle.loads(pickle.dumps(UNSET)) is UNSET
    assert merged.replace(model=UNSET).model is UNSET and SettingFlags(model=None, pass_env=[]).given() == {}
    with pytest.raises(TypeError, match="unknown settings: modle"):
        SettingFlags(modle="x")


def test_every_front_end_offers_the_flags_of_the_settings_that_apply_to_it() -> None:
    import typer

    from cogcli.cli import app

    root = typer.main.get_command(app)
    commands = {"edit": ["edit"], "chat": ["chat"], "serve": ["serve"], "acp": ["acp"], "batch": ["batch", "run"],
                "mcp": ["mcp"], "tool": ["tool"], "config": ["config"]}
    for command, path in commands.items():
        cmd = root
        for name in path:
            cmd = cmd.commands[name]  # type: ignore[attr-defined]
        offered = {flag for p in cmd.params for flag in (*p.opts, *p.secondary_opts)}
        for setting in applies_to(command):
            assert set(setting.flags[0].split("/")) <= offered, (command, setting.name)
    # what the issue asked for: cog chat's and cog serve's settings
    for name in ("sandbox", "mcp_servers", "timeout", "pass_env", "yes", "max_steps", "test_command"):
        assert "chat" in BY_NAME[name].commands
    for name in ("sandbox", "timeout", "pass_env", "max_steps", "test_command", "context_window"):
        assert "serve" in BY_NAME[name].commands
    assert {s.name for s in SETTINGS if s.config and s.flags} >= {"model", "sandbox", "pass_env", "approval", "timeout"}


def test_a_bad_flag_value_is_a_usage_error_naming_the_flag(tmp_path: Path) -> None:
    out = run_cog(["config", "--timeout", "0", "-C", str(tmp_path)], tmp_path)
    assert out.returncode == 2 and "--timeout must be more than 0" in out.stderr and "Traceback" not in out.stderr


def test_cog_config_says_where_each_setting_came_from(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"cog.toml": 'test_command = "make test"\n'})
    env = {**person(tmp_path, 'model = "ollama:mine"\n[providers.ollama]\nbase_url = "http://127.0.0.1:9/v1"\n'), "COG_TIMEOUT": "30"}
    out = run_cog(["config", "--json", "--max-steps", "9"], repo, env=env)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)["settings"]
    assert data["model"] == {"value": "ollama:mine", "from": str(config_path(env))}
    assert data["test_command"] == {"value": "make test", "from": "cog.toml"}
    assert data["timeout"] == {"value": 30.0, "from": "COG_TIMEOUT"}
    assert data["max_steps"] == {"value": 9, "from": "--max-steps"}
    assert data["base_urls"]["value"] == {"ollama": "http://127.0.0.1:9/v1"}
    text = run_cog(["config"], repo, env=env)
    assert text.returncode == 0 and "make test" in text.stdout and "cog.toml" in text.stdout


def test_cog_config_shows_the_hooks_in_effect_with_where_each_came_from(tmp_path: Path) -> None:
    """Issue 49: the person's hooks and the workspace's, in the order they run, each with its file —
    a workspace hook saying whether it was approved (it runs only once it is)."""
    repo = repo_with(tmp_path, {"cog.toml": '[[hooks.PostToolUse]]\nmatcher = "edit_file"\ncommand = "./check.sh"\n',
                                "check.sh": "#!/bin/sh\nexit 0\n"})
    env = person(tmp_path, '[[hooks.PreToolUse]]\ncommand = "~/bin/guard.py"\ntimeout = 10\n')
    out = run_cog(["config", "--json"], repo, env=env)
    assert out.returncode == 0, out.stderr
    hooks = json.loads(out.stdout)["hooks"]
    assert hooks == [
        {"event": "PreToolUse", "matcher": "*", "command": "~/bin/guard.py", "timeout": 10.0, "from": str(config_path(env)), "approved": True},
        {"event": "PostToolUse", "matcher": "edit_file", "command": "./check.sh", "timeout": 60.0, "from": "cog.toml", "approved": False},
    ]
    text = run_cog(["config"], repo, env=env).stdout
    assert f"PreToolUse       every tool  ~/bin/guard.py  (timeout 10s)  {config_path(env)}" in text
    assert "PostToolUse      matcher edit_file  ./check.sh  (timeout 60s)  cog.toml, not approved: runs once you approve it with `cog trust`" in text
    assert run_cog(["trust", "--approve"], repo, env=env).returncode == 0
    assert [h["approved"] for h in json.loads(run_cog(["config", "--json"], repo, env=env).stdout)["hooks"]] == [True, True]
    (tmp_path / "plain").mkdir()
    plain = repo_with(tmp_path / "plain", {})
    assert json.loads(run_cog(["config", "--json"], plain, env=person(tmp_path, "")).stdout)["hooks"] == []
    assert "hooks: none" in run_cog(["config"], plain, env=person(tmp_path, "")).stdout


def test_a_base_url_from_the_persons_config_is_below_the_providers_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cogcli.session.factory import make_model

    env = person(tmp_path, '[providers.openai]\nbase_url = "http://127.0.0.1:9/v1"\n')
    (tmp_path / "ws").mkdir()
    settings = load_settings(tmp_path / "ws", SettingFlags(model="openai:m"), environ=env)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert make_model(settings).base_url == "http://127.0.0.1:9/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:10/v1")
    assert make_model(settings).base_url == "http://127.0.0.1:10/v1"
    assert os.environ["OPENAI_API_KEY"] == "k"


@pytest.mark.anyio
async def test_two_sessions_in_one_process_do_not_share_what_their_tests_get(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Repository A passes ONLY_FOR_A (its cog.toml) and PERSON_A (a flag) to its tests; repository
    B's tests, run after A's in the same process (cog acp with two workspaces, cog serve, a batch
    worker), get neither, and cog's own environment is left as it was."""
    from cogcli.session import Session

    monkeypatch.setenv("ONLY_FOR_A", "a-secretish")
    monkeypatch.setenv("PERSON_A", "person")
    monkeypatch.delenv("COG_PASS_ENV", raising=False)
    monkeypatch.delenv("COG_SANDBOX_WRITABLE", raising=False)
    before = dict(os.environ)
    show = 'sh -c \'echo "A=${ONLY_FOR_A:-none} P=${PERSON_A:-none}"; test -z "$ONLY_FOR_A$PERSON_A"\''
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    repo_a = repo_with(tmp_path / "a", {"cog.toml": f'pass_env = ["ONLY_FOR_A"]\ntest_command = """{show}"""\n'})
    repo_b = repo_with(tmp_path / "b", {"cog.toml": f'test_command = """{show}"""\n'})
    nobody = {"XDG_CONFIG_HOME": str(tmp_path / "none")}
    in_a = Session(load_settings(repo_a, SettingFlags(sandbox="off", pass_env=["PERSON_A"]), environ=nobody), only=["run_tests"])
    in_b = Session(load_settings(repo_b, SettingFlags(sandbox="off"), environ=nobody), only=["run_tests"])
    ran_a = await in_a.invoke_tool("run_tests", {})
    ran_b = await in_b.invoke_tool("run_tests", {})
    # A's tests got them (and so failed the check); a value passed beyond the allow-list is a secret of the run
    assert "A=[REDACTED] P=person" in str(ran_a.result) and ran_a.redacted >= 1
    assert "A=none P=none" in str(ran_b.result) and ran_b.error is None, ran_b.result
    assert dict(os.environ) == before


def test_the_home_folder_root_and_folders_above_home_are_no_workspace(tmp_path: Path) -> None:
    """``cog tool list_files -C ~`` listed every file of a home; now the home, ``/`` and the folders
    above the home are refused (exit 2) whether named with -C, started in, or a repository's top;
    a project folder keeps its hint and its -C."""
    home = tmp_path / "home" / "me"
    project = home / "src" / "proj"
    project.mkdir(parents=True)
    (project / "a.py").write_text("x = 1\n")
    env = {"HOME": str(home)}
    for where, cwd, says in ((str(home), project, "is your home folder"), (str(home.parent), project, "is a folder above your home"),
                             ("/", project, "is the root folder"), (None, home, "is your home folder")):
        out = run_cog(["tool", "list_files", *(["-C", where] if where else [])], cwd, env=env)
        assert out.returncode == 2 and says in out.stderr and "-C path/to/project" in out.stderr, out.stderr
        assert "a.py" not in out.stdout
    hint = run_cog(["tool", "list_files"], project, env=env)
    assert hint.returncode == 2 and "-C ." in hint.stderr
    listed = run_cog(["tool", "list_files", "-C", "."], project, env=env)
    assert listed.returncode == 0 and "a.py" in listed.stdout
    (home / ".git").mkdir()  # a home that is a repository (dotfiles): still no workspace
    out = run_cog(["tool", "list_files", "-C", str(home / "src")], project, env=env)
    assert out.returncode == 2 and "is your home folder" in out.stderr


def test_cache_ttl_has_one_set_of_choices() -> None:
    """The setting, the workspace's key and the Anthropic client take the same values (issue 37:
    cache_ttl was checked in four places with their own lists)."""
    from typing import get_args

    from cogcli.models.anthropic import CACHE_TTLS as CLIENTS
    from cogcli.settings.options import CACHE_TTLS
    from cogcli.settings.workspace_file import CacheTtlSetting

    assert CACHE_TTLS == CLIENTS == get_args(CacheTtlSetting) == BY_NAME["cache_ttl"].choices
