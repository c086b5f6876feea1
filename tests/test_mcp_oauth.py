"""Signing in to a remote MCP server that needs OAuth 2.1, end to end against real parts on loopback
(``tests/mcp_oauth_servers.py``: the SDK's authorization-server routes and its bearer-protected
server): the loopback redirect and its state, PKCE, the resource and issuer checks, tokens kept
0600 and redacted, refresh before expiry and across two processes, logout with revocation, and a
run that meets a server needing sign-in going on without it."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from cogcli.contract.errors import ConfigError
from cogcli.mcp.client import RemoteSpec, connect_http, mcp_tools
from cogcli.mcp.login import login, logout
from cogcli.mcp.oauth_provider import CogOAuth
from cogcli.mcp.token_store import TokenFile, tokens_folder
from cogcli.secrets.redactor import redact
from mcp_oauth_servers import World, follow_as_browser, oauth_world

pytestmark = pytest.mark.anyio
HERE = Path(__file__).resolve().parent


async def sign_in(world: World, *, forged_first: bool = False) -> None:
    """``cog mcp login`` with the browser step done by a client following the redirects."""
    async with anyio.create_task_group() as tg:

        def show(url: str) -> None:
            async def browse() -> None:
                if forged_first:  # a page that found the port sends its own code first
                    import httpx2
                    from urllib.parse import parse_qs, urlsplit

                    redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]
                    async with httpx2.AsyncClient() as http:
                        forged = await http.get(redirect, params={"code": "attacker-code", "state": "guessed"})
                    assert forged.status_code == 400
                assert await follow_as_browser(url) == 200

            tg.start_soon(browse)

        try:
            done = await login("protected", world.url, show_url=show, open_browser=False, timeout=30)
        except ConfigError as exc:
            failed: ConfigError | None = exc
            tg.cancel_scope.cancel()
        else:
            failed = None
    if failed is not None:
        raise failed
    assert (done.tools, done.issuer) == (1, world.issuer)


async def test_login_then_a_run_uses_the_server_with_the_kept_tokens(person_state_home: Path) -> None:
    async with oauth_world() as world:
        await sign_in(world)
        store = TokenFile(world.url)
        record = store.read()
        assert record.issuer == world.issuer and record.tokens and record.expires_at and record.expires_at > time.time() + 3000
        # the token is bound to this server (RFC 8707) and the registration to its issuer
        (token,) = world.provider.access.values()
        assert token.resource == world.url
        assert world.provider.grants["authorization_code"] == 1
        # kept in the person's state folder, readable by them alone
        folder = tokens_folder()
        assert folder.is_relative_to(person_state_home)
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700 and stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
        # a run: the tools of the server, signed in with the kept token, no browser
        async with mcp_tools([], remotes=[RemoteSpec("protected", world.url, {})]) as tools:
            assert [t.name for t in tools] == ["whoami"]
            assert tools[0].annotations["mcpServer"] == "protected"
        assert world.provider.grants == {"authorization_code": 1, "refresh_token": 0, "refused_refresh": 0}


async def test_a_run_that_meets_a_server_needing_sign_in_says_so_once_and_goes_on(
    person_state_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with oauth_world() as world:
        with caplog.at_level(logging.WARNING, logger="cogcli"):
            async with mcp_tools([], remotes=[RemoteSpec("protected", world.url, {})]) as tools:
                assert tools == []
        said = [r.getMessage() for r in caplog.records if "sign in" in r.getMessage()]
        assert said == ["the MCP server protected needs you to sign in: run `cog mcp login protected`; this run goes on without its tools"]
        assert world.provider.clients == {}  # no registration, no browser: nobody was there to sign in
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="cogcli"):
            async with mcp_tools([world.url]) as tools:  # a bare URL (--mcp URL): how to name it and sign in
                assert tools == []
        assert [r.getMessage() for r in caplog.records] == [
            f"the MCP server {world.url} needs you to sign in: name it with `cog mcp add NAME {world.url}`, "
            "then run `cog mcp login NAME`; this run goes on without its tools"
        ]
        await sign_in(world)  # the sign-in is the URL's: a bare --mcp URL uses it too
        async with mcp_tools([world.url]) as tools:
            assert [t.name for t in tools] == ["whoami"]


async def test_a_forged_callback_is_refused_and_the_real_sign_in_completes(person_state_home: Path) -> None:
    async with oauth_world() as world:
        await sign_in(world, forged_first=True)
        assert world.provider.grants["authorization_code"] == 1  # the real code, exchanged once


async def test_a_redirect_naming_another_issuer_is_refused(person_state_home: Path) -> None:
    """RFC 9207: a response claiming another issuer (a mix-up attack) ends the sign-in before the code is spent."""
    async with oauth_world(redirect_iss="http://127.0.0.1:1/evil") as world:
        with pytest.raises(ConfigError, match="signing in to protected .* failed: OAuthFlowError: Authorization response iss mismatch"):
            await sign_in(world)
        assert world.provider.grants["authorization_code"] == 0
        assert not TokenFile(world.url).signed_in()


async def test_tokens_are_redacted_once_known(person_state_home: Path) -> None:
    async with oauth_world() as world:
        await sign_in(world)
        tokens = TokenFile(world.url).read().tokens or {}
        for kind in ("access_token", "refresh_token"):
            text, count = redact(f"the server echoed {tokens[kind]} back")
            assert tokens[kind] not in text and count == 1
        assert redact("an unrelated at-Zm9vYmFyYmF6cXV4cXV1eA value")[1] == 0  # only what cog was given


async def test_an_access_token_about_to_expire_is_refreshed_first(person_state_home: Path) -> None:
    async with oauth_world() as world:
        await sign_in(world)
        store = TokenFile(world.url)
        record = store.read()
        before = record.tokens
        record.expires_at = time.time() + 5  # within the margin: refreshed before it is used
        store.write(record)
        async with connect_http(world.url, auth=CogOAuth("protected", world.url, store)) as server:
            assert len(server.tools) == 1
        after = store.read()
        assert world.provider.grants["refresh_token"] == 1
        assert after.tokens and before and after.tokens["refresh_token"] != before["refresh_token"]
        assert after.expires_at and after.expires_at > time.time() + 3000


@pytest.mark.parametrize("lock", ["locked", "unlocked"])
async def test_two_processes_spend_the_refresh_token_once(person_state_home: Path, lock: str) -> None:
    """Both processes find the token expired; with the lock one refreshes and the other reads what
    it wrote. Without it both spend the same refresh token, the rotating server refuses the second,
    and that process is signed out."""
    async with oauth_world(refresh_delay=3.0) as world:
        await sign_in(world)
        store = TokenFile(world.url)
        record = store.read()
        record.expires_at = time.time() - 1
        store.write(record)
        argv = [sys.executable, str(HERE / "mcp_oauth_servers.py"), "child", world.url] + (["unlocked"] if lock == "unlocked" else [])
        outputs: list[str] = []

        async def child() -> None:
            done = await anyio.run_process(argv, cwd=HERE.parent, env={**os.environ, "PYTHONPATH": str(HERE.parent)}, check=False)
            outputs.append(done.stdout.decode().strip() or done.stderr.decode()[-300:])

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(child)
                tg.start_soon(child)
        if lock == "locked":
            assert outputs == ["OK 1", "OK 1"]
            assert (world.provider.grants["refresh_token"], world.provider.grants["refused_refresh"]) == (1, 0)
        else:
            assert sorted(outputs) == ["FAILED sign-in needed", "OK 1"]
            assert world.provider.grants["refused_refresh"] >= 1


async def test_logout_revokes_and_forgets(person_state_home: Path) -> None:
    async with oauth_world() as world:
        await sign_in(world)
        store = TokenFile(world.url)
        tokens = store.read().tokens or {}
        assert await logout(world.url) == (True, True)
        assert {tokens["access_token"], tokens["refresh_token"]} <= set(world.provider.revoked)
        assert not store.path.exists()
        auth = CogOAuth("protected", world.url, store)
        with pytest.raises(Exception):
            async with connect_http(world.url, auth=auth):
                pass
        assert auth.sign_in_needed


async def test_the_token_file_is_never_written_or_read_through_a_link(person_state_home: Path, tmp_path: Path) -> None:
    store = TokenFile("https://mcp.example.com/mcp")
    target = tmp_path / "elsewhere.json"
    target.write_text("keep me")
    store.path.symlink_to(target)
    with pytest.raises(ConfigError, match="cannot read the sign-in"):
        store.read()
    from cogcli.mcp.token_store import StoredTokens

    store.write(StoredTokens(server_url=store.server_url, tokens={"access_token": "at-0123456789abcdef"}))
    assert target.read_text() == "keep me"
    assert not store.path.is_symlink() and stat.S_IMODE(os.stat(store.path).st_mode) == 0o600


async def cli_login(world: World, env: dict[str, str]) -> tuple[int, str, str]:
    """``cog mcp login protected --no-browser``, the printed URL followed as a browser would."""
    proc = await anyio.open_process([sys.executable, "-m", "cogcli", "mcp", "login", "protected", "--no-browser"], env=env)
    assert proc.stderr is not None and proc.stdout is not None
    seen = b""
    with anyio.fail_after(60):
        while b"\n  http" not in seen or not seen.endswith(b"\n"):
            seen += await proc.stderr.receive()
    url = seen.decode().split("\n  ", 1)[1].strip()
    await follow_as_browser(url)
    with anyio.fail_after(60):
        code = await proc.wait()
    out, err = b"", b""
    async for chunk in proc.stdout:
        out += chunk
    async for chunk in proc.stderr:
        err += chunk
    return code, out.decode(), err.decode()


@pytest.mark.slow
def test_a_failed_cli_sign_in_is_one_line_naming_it_never_a_traceback(person_state_home: Path, tmp_path: Path) -> None:
    async def main() -> None:
        async with oauth_world(redirect_iss="http://127.0.0.1:1/evil") as world:
            env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
            await anyio.run_process([sys.executable, "-m", "cogcli", "mcp", "add", "protected", world.url], env=env)
            code, out, err = await cli_login(world, env)
            assert code == 1 and out == ""
            assert "Traceback" not in err and "OAuth flow error" not in err
            assert err.strip().splitlines()[-1].startswith("cog: signing in to protected (")
            assert "iss mismatch" in err

    anyio.run(main)


@pytest.mark.slow
def test_the_cli_login_prints_the_url_with_no_browser_and_signs_in(person_state_home: Path, tmp_path: Path) -> None:
    """``cog mcp add`` then ``cog mcp login --no-browser`` as the person runs them; the browser
    step done by following the printed URL."""

    async def main() -> None:
        async with oauth_world() as world:
            env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
            added = await anyio.run_process([sys.executable, "-m", "cogcli", "mcp", "add", "protected", world.url], env=env)
            assert b"added protected" in added.stdout
            before = await anyio.run_process([sys.executable, "-m", "cogcli", "mcp", "list"], env=env, check=False)
            assert "needs a sign-in: cog mcp login protected" in before.stdout.decode() and before.returncode == 1
            code, out, err = await cli_login(world, env)
            assert code == 0, err
            assert f"signed in to protected at {world.issuer}: 1 tool(s)" in out
            listed = await anyio.run_process([sys.executable, "-m", "cogcli", "mcp", "list"], env=env)
            text = listed.stdout.decode()
            assert "protected  http" in text and "signed in (token valid" in text and "tools: whoami" in text

    anyio.run(main)


async def test_every_front_end_gets_the_persons_server_signed_in_and_its_token_redacted(
    person_state_home: Path, tmp_path: Path, make_repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session (what every front end opens) of a person whose config names the server: the
    agent calls its tool with the kept token and the header from the person's variable; the
    server echoing the token back reaches neither the model nor the events."""
    from cli_helpers import REPLAY
    from cogcli.models.scripted import Call, ScriptedModel, Turn
    from cogcli.session import Session
    from cogcli.settings.load import load_settings

    repo = make_repo("calc")
    async with oauth_world() as world:
        await sign_in(world)
        (tmp_path / "xdg" / "cog").mkdir(parents=True)
        (tmp_path / "xdg" / "cog" / "config.toml").write_text(
            f'[mcp_servers.protected]\nurl = "{world.url}"\nheaders = {{ "X-Team" = "COG_TEST_TEAM" }}\n'
        )
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
        monkeypatch.setenv("COG_TEST_TEAM", "blue")
        token = (TokenFile(world.url).read().tokens or {})["access_token"]
        model = ScriptedModel([Turn(calls=[Call("c1", "whoami", {})]), Turn(text="done")])
        session = Session.open(load_settings(repo, model=REPLAY, sandbox="off"), cwd=repo, interactive=False)
        await session.model.aclose()
        session.model = model
        events: list[object] = []
        async with session:
            result = await session.run("who am I?", on_event=events.append)
        assert result.status == "completed"
        seen = next(m.content for m in model.requests[1] if m.role == "tool")
        assert "team blue" in seen and "[REDACTED]" in seen and token not in seen
        assert token not in "".join(e.model_dump_json() for e in events)  # type: ignore[attr-defined]


async def test_a_session_meeting_a_server_that_needs_sign_in_runs_without_it(
    person_state_home: Path, tmp_path: Path, make_repo, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from cli_helpers import REPLAY
    from cogcli.models.scripted import ScriptedModel, Turn
    from cogcli.session import Session
    from cogcli.settings.load import load_settings

    repo = make_repo("calc")
    async with oauth_world() as world:
        (tmp_path / "xdg" / "cog").mkdir(parents=True)
        (tmp_path / "xdg" / "cog" / "config.toml").write_text(f'[mcp_servers.protected]\nurl = "{world.url}"\n')
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
        model = ScriptedModel([Turn(text="fine without it"), Turn(text="still fine")])
        session = Session.open(load_settings(repo, model=REPLAY, sandbox="off"), cwd=repo, interactive=False)
        await session.model.aclose()
        session.model = model
        with caplog.at_level(logging.WARNING, logger="cogcli"):
            async with session:
                first = await session.run("go")
                second = await session.run("again", thread=first.thread_id)
        assert (first.status, second.status) == ("completed", "completed")
        assert "whoami" not in {t.name for t in session.run_tools()}
        assert sum("cog mcp login protected" in r.getMessage() for r in caplog.records) == 1
