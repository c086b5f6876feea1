"""One secrets policy (issue 13 §1): every token format the README lists, whole armoured key blocks
of every kind, environment values in their common encodings, every field of a result and of an
update; properties over generated values: nothing listed survives, and redaction is idempotent."""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogcli.contract.context import ToolUpdate
from cogcli.contract.invoke import ToolResult
from cogcli.contract.presentation import ToolPresentation
from cogcli.secrets.redactor import REDACTED, KeyLines, redact, redact_result, redact_update, redact_value, update_redactor
from workspace_tools import workspace_tools
from workspace_tools.workspace.secret_files import SecretPolicy

B62 = string.ascii_letters + string.digits
RNG = random.Random(13)


def _r(alphabet: str, n: int) -> str:
    return "".join(RNG.choices(alphabet, k=n))


#: one example of each format the README says is caught
TOKENS = {
    "aws": "AKIA" + _r(string.ascii_uppercase + string.digits, 16),
    "aws-temp": "ASIA" + _r(string.ascii_uppercase + string.digits, 16),
    "openai": "sk-proj-" + _r(B62, 40),
    "anthropic": "sk-ant-api03-" + _r(B62, 60),
    "github": "ghp_" + _r(B62, 36),
    "github-app": "ghs_" + _r(B62, 36),
    "github-oauth": "gho_" + _r(B62, 36),
    "github-pat": "github_pat_11" + _r(B62 + "_", 80),
    "gitlab": "glpat-" + _r(B62 + "_-", 20),
    "gitlab-trigger": "glptt-" + _r("0123456789abcdef", 40),
    "gitlab-runner": "glrt-" + _r(B62, 20),
    "gitlab-registration": "GR1348941" + _r(B62, 20),
    "slack-bot": "xoxb-1234567890-0987654321-" + _r(B62, 24),
    "slack-app": "xapp-1-A0123456789-" + _r(B62, 30),
    "slack-webhook": "hooks.slack.com/services/T0123ABCD/B0123ABCD/" + _r(B62, 24),
    "google": "AIza" + _r(B62 + "_-", 35),
    "google-oauth": "GOCSPX-" + _r(B62 + "_-", 28),
    "stripe": "sk_live_" + _r(B62, 24),
    "stripe-restricted": "rk_live_" + _r(B62, 24),
    "stripe-webhook": "whsec_" + _r(B62, 32),
    "npm": "npm_" + _r(B62, 36),
    "pypi": "pypi-AgEIcHlwaS5vcmc" + _r(B62 + "_-", 60),
    "huggingface": "hf_" + _r(string.ascii_letters, 34),
    "sendgrid": "SG." + _r(B62 + "_-", 22) + "." + _r(B62 + "_-", 43),
    "digitalocean": "dop_v1_" + _r("0123456789abcdef", 64),
    "shopify": "shpat_" + _r("0123456789abcdef", 32),
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + _r(B62 + "_-", 43),
}


@pytest.mark.parametrize("kind", sorted(TOKENS))
def test_each_documented_token_format_is_redacted_where_it_stands(kind: str) -> None:
    secret = TOKENS[kind]
    for text in (secret, f"key = '{secret}'\n", f"export X={secret}; echo", f"[{secret}]", f"x\n{secret}\ny", json.dumps({"k": secret})):
        out, n = redact(text, environ={})
        assert secret not in out and n >= 1 and REDACTED in out, (kind, text, out)


def test_url_credentials_lose_their_password_and_keep_the_rest() -> None:
    git_credentials = "https://alice:s3cretPassw0rd@github.com\nhttps://bob:glpat-" + "x" * 20 + "@gitlab.com\n"
    out, n = redact(git_credentials, environ={})
    assert out == f"https://alice:{REDACTED}@github.com\nhttps://bob:{REDACTED}@gitlab.com\n" and n == 2
    out, _ = redact("DATABASE_URL=postgres://app:hunter2hunter2@db:5432/app", environ={})
    assert out == f"DATABASE_URL=postgres://app:{REDACTED}@db:5432/app"
    for plain in ("https://github.com/a/b", "http://localhost:8080/x", "ssh://git@github.com/a.git", "mailto:a@b.c"):
        assert redact(plain, environ={}) == (plain, 0)


def test_aws_secret_access_key_assignments_lose_the_value() -> None:
    value = _r(B62 + "/+", 40)
    for text in (f"aws_secret_access_key = {value}", f'AWS_SECRET_ACCESS_KEY="{value}"', f"aws_secret_access_key: '{value}'"):
        out, n = redact(text, environ={})
        assert value not in out and n == 1 and out.endswith((REDACTED, REDACTED + '"', REDACTED + "'"))


# --- armoured key blocks ----------------------------------------------------------------------


def _armoured(begin: str, end: str, body_lines: int, *, headers: str = "", blank: bool = False, width: int = 64) -> tuple[str, list[str]]:
    body = [_r(B62 + "+/", width) for _ in range(body_lines)] + [_r(B62 + "+/", 20) + "=="]
    text = begin + "\n" + headers + ("\n" if blank else "") + "\n".join(body) + "\n" + end + "\n"
    return text, body


KEYS = {
    "rsa": ("-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", {}),
    "pkcs8": ("-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----", {}),
    "encrypted-pem": ("-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", {"headers": "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0123456789ABCDEF\n", "blank": True}),
    "ec": ("-----BEGIN EC PRIVATE KEY-----", "-----END EC PRIVATE KEY-----", {}),
    "openssh": ("-----BEGIN OPENSSH PRIVATE KEY-----", "-----END OPENSSH PRIVATE KEY-----", {"width": 70}),
    "pgp": ("-----BEGIN PGP PRIVATE KEY BLOCK-----", "-----END PGP PRIVATE KEY BLOCK-----", {"headers": "Version: GnuPG v2\nComment: my key\n", "blank": True}),
    "pgp-bare": ("-----BEGIN PGP PRIVATE KEY BLOCK-----", "-----END PGP PRIVATE KEY BLOCK-----", {"blank": True}),
    "ssh2": ("---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----", "---- END SSH2 ENCRYPTED PRIVATE KEY ----", {"headers": 'Comment: "rsa-key-20261202"\n'}),
}


@pytest.mark.parametrize("kind", sorted(KEYS))
def test_every_armoured_key_kind_is_redacted_from_begin_to_end(kind: str) -> None:
    begin, end, options = KEYS[kind]
    key, body = _armoured(begin, end, 30, **options)
    text = f"before\n{key}after\n"
    out, n = redact(text, environ={})
    assert out == f"before\n{REDACTED}\nafter\n" and n == 1, out
    # cut anywhere (a read_file range, a search excerpt): no body line of it is shown
    numbered = "".join(f"{i:>6}\t{line}\n" for i, line in enumerate(text.splitlines(), 1)).splitlines(keepends=True)
    for cut in (numbered[:8], numbered[3:], numbered[:-4]):  # a middle without markers: read_file sees the whole file (KeyLines)
        out, _ = redact("".join(cut), environ={})
        assert not any(b in out for b in body), (kind, out)
    is_key = KeyLines()
    shown = [line for line in text.splitlines() if not is_key(line)]
    assert shown == ["before", "after"]


def test_a_pgp_key_longer_than_twenty_thousand_characters_is_still_one_block() -> None:
    key, body = _armoured("-----BEGIN PGP PRIVATE KEY BLOCK-----", "-----END PGP PRIVATE KEY BLOCK-----", 600, headers="Version: x\n", blank=True)
    assert len(key) > 35_000
    out, n = redact(f"a\n{key}b\n", environ={})
    assert out == f"a\n{REDACTED}\nb\n" and n == 1


def test_read_file_of_a_pgp_key_range_shows_none_of_its_body(tmp_path: Path) -> None:
    import anyio

    from cogcli.contract.invoke import invoke_tool

    key, body = _armoured("-----BEGIN PGP PRIVATE KEY BLOCK-----", "-----END PGP PRIVATE KEY BLOCK-----", 40, headers="Version: GnuPG v2\n", blank=True)
    (tmp_path / "notes.txt").write_text("intro\n" + key + "outro\n")
    tools = {t.name: t for t in workspace_tools(tmp_path, include_git=False)}
    for args in ({"path": "notes.txt"}, {"path": "notes.txt", "offset": 5, "limit": 10}, {"path": "notes.txt", "offset": 3}):
        result = redact_result(anyio.run(invoke_tool, tools["read_file"], args))
        shown = json.dumps(result.result)
        assert not any(b in shown for b in body), args


# --- environment values and their encodings ---------------------------------------------------


def test_environment_values_are_found_in_their_common_encodings() -> None:
    value = "Zq7#env/Secret+v4lue\"x"
    env = {"SERVICE_API_KEY": value}
    forms = {
        "plain": value,
        "json": json.dumps(value)[1:-1],
        "url": quote(value, safe=""),
        "url-plus": quote_plus(value),
        "base64": base64.b64encode(value.encode()).decode(),
        "base64-urlsafe": base64.urlsafe_b64encode(value.encode()).decode(),
        "basic-auth": base64.b64encode(b"user:" + value.encode()).decode(),
        "basic-auth-2": base64.b64encode(b"us:" + value.encode() + b"\n").decode(),
        "basic-auth-3": base64.b64encode(b"u:" + value.encode() + b"tail").decode(),
    }
    for kind, form in forms.items():
        out, n = redact(f"seen: {form} end", environ=env)
        assert n >= 1 and value not in out, kind
        decoded_tail = out.split()[1]
        assert value not in decoded_tail
    # base64 forms leave no decodable copy of the value
    out, _ = redact(forms["basic-auth"], environ=env)
    assert out.endswith(REDACTED) and len(out) < len(forms["basic-auth"])


@given(
    value=st.text(alphabet=string.printable.strip(), min_size=8, max_size=40),
    prefix=st.binary(max_size=7),
    suffix=st.binary(max_size=7),
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_property_a_secret_value_never_survives_base64_at_any_offset(value: str, prefix: bytes, suffix: bytes) -> None:
    env = {"GEN_TOKEN": value}
    blob = base64.b64encode(prefix + value.encode() + suffix).decode()
    out, n = redact(blob, environ=env)
    assert n >= 1
    # nothing left decodes back to the value, at any alignment of what is left
    for piece in out.split(REDACTED):
        for start in range(4):
            chunk = piece[start:]
            chunk = chunk[: len(chunk) - len(chunk) % 4]
            try:
                assert value.encode() not in base64.b64decode(chunk)
            except ValueError:
                pass


# --- properties: generated files ---------------------------------------------------------------

FILLER = st.text(alphabet=string.ascii_letters + string.digits + " _-.,;:()[]{}#=+*/'\"\n\t", max_size=300)
DELIMS = st.sampled_from([" ", "\n", "=", "'", '"', ":", "(", ",", "\t", "= ", "\n\n"])
ENV_VALUE = st.text(alphabet=string.ascii_letters + string.digits + "#!@%^&*-_.~+/=", min_size=8, max_size=48)


def _token_strategy() -> st.SearchStrategy[str]:
    def token(prefix: str, alphabet: str, lo: int, hi: int) -> st.SearchStrategy[str]:
        return st.text(alphabet=alphabet, min_size=lo, max_size=hi).map(lambda s: prefix + s)

    hexd = "0123456789abcdef"
    return st.one_of(
        token("AKIA", string.ascii_uppercase + string.digits, 16, 16),
        token("sk-", B62 + "_-", 20, 60),
        token("ghp_", B62, 36, 36),
        token("github_pat_", B62 + "_", 22, 90),
        token("glpat-", B62 + "_-", 20, 30),
        token("xoxb-", B62 + "-", 10, 50),
        token("AIza", B62 + "_-", 35, 35),
        token("sk_live_", B62, 10, 40),
        token("npm_", B62, 36, 36),
        token("pypi-AgEIcHlwaS5vcmc", B62 + "_-", 50, 80),
        token("dop_v1_", hexd, 64, 64),
        st.tuples(st.text(alphabet=B62 + "_-", min_size=10, max_size=30), st.text(alphabet=B62 + "_-", min_size=10, max_size=30)).map(
            lambda p: f"eyJ{p[0]}.eyJ{p[1]}.sig"
        ),
    )


def _key_strategy() -> st.SearchStrategy[tuple[str, list[str]]]:
    return st.tuples(st.sampled_from(sorted(KEYS)), st.integers(1, 12), st.randoms(use_true_random=False)).map(_make_key)


def _make_key(args: tuple[str, int, random.Random]) -> tuple[str, list[str]]:
    kind, lines, rng = args
    begin, end, options = KEYS[kind]
    width = options.get("width", 64)
    body = ["".join(rng.choices(B62 + "+/", k=width)) for _ in range(lines)] + ["".join(rng.choices(B62, k=rng.randint(4, 30))) + "=="]
    text = begin + "\n" + options.get("headers", "") + ("\n" if options.get("blank") else "") + "\n".join(body) + "\n" + end + "\n"
    return text, body


@st.composite
def generated_file(draw: st.DrawFn) -> tuple[str, list[str], dict[str, str]]:
    """A file of filler with tokens, env values (plain or encoded) and key blocks put at random places."""
    env_value = draw(ENV_VALUE)
    env = {"GENERATED_SERVICE_TOKEN": env_value}
    parts: list[str] = []
    secrets: list[str] = []
    for _ in range(draw(st.integers(1, 6))):
        parts.append(draw(FILLER))
        parts.append(draw(DELIMS))
        kind = draw(st.sampled_from(["token", "env", "env-b64", "env-json", "env-url", "key", "url"]))
        if kind == "token":
            token = draw(_token_strategy())
            parts.append(token)
            secrets.append(token)
        elif kind == "env":
            parts.append(env_value)
            secrets.append(env_value)
        elif kind == "env-b64":
            parts.append(base64.b64encode(env_value.encode()).decode())
            secrets.append(env_value)  # checked decoded below
        elif kind == "env-json":
            parts.append(json.dumps(env_value)[1:-1])
            secrets.append(env_value)
        elif kind == "env-url":
            parts.append(quote(env_value, safe=""))
            secrets.append(env_value)
        elif kind == "url":
            password = draw(st.text(alphabet=B62 + "!$*", min_size=6, max_size=30))
            parts.append(f"https://user:{password}@example.com/repo.git")
            secrets.append(f":{password}@")
        else:
            key, body = draw(_key_strategy())
            parts.append("\n" + key)
            secrets.extend(body)
        parts.append(draw(DELIMS))
    return "".join(parts), secrets, env


def _leaks(out: str, secrets: list[str]) -> list[str]:
    decoded_views = [out, json.loads(json.dumps(out))]
    leaked = [s for s in secrets if any(s in view for view in decoded_views)]
    return leaked


@given(generated_file())
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_property_no_listed_secret_survives_and_redaction_is_idempotent(case: tuple[str, list[str], dict[str, str]]) -> None:
    text, secrets, env = case
    out, n = redact(text, environ=env)
    assert not _leaks(out, secrets), (text, out)
    assert n >= 1
    again, m = redact(out, environ=env)
    assert (again, m) == (out, 0)


@given(generated_file())
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_property_every_field_of_a_result_and_an_update_is_redacted(case: tuple[str, list[str], dict[str, str]]) -> None:
    text, secrets, env = case
    result = ToolResult(
        call_id="c",
        name="t",
        result={"text": text, "lines": text.splitlines()},
        details={"diff": text, "nested": [{"k": text}]},
        presentation=ToolPresentation(label="Read", detail=text[:200]),
        error=text,
    )
    import os

    old = dict(os.environ)
    os.environ.update(env)
    try:
        clean = redact_result(result)
        update = redact_update(ToolUpdate("c", "t", content=text, details={"out": text}, presentation=ToolPresentation(label=text[:50] or "x")))
    finally:
        os.environ.clear()
        os.environ.update(old)
    for field in (json.dumps(clean.result), json.dumps(clean.details), clean.error or "", json.dumps(update.content), json.dumps(update.details)):
        assert not _leaks(json.loads(json.dumps(field)), secrets)
    assert clean.redacted >= 1 and isinstance(clean.presentation, ToolPresentation)


def test_redact_value_keeps_clean_values_identical_and_types_when_it_can() -> None:
    clean = {"a": [1, "x", {"b": None}], "p": ToolPresentation(label="ok")}
    assert redact_value(clean, environ={}) == (clean, 0) and redact_value(clean, environ={})[0] is clean
    p, n = redact_value(ToolPresentation(label="Read", detail=TOKENS["github"]), environ={})
    assert n == 1 and isinstance(p, ToolPresentation) and p.detail == REDACTED
    u, n = redact_value(("a", TOKENS["npm"]), environ={})
    assert u == ("a", REDACTED) and n == 1


def test_redact_update_covers_content_details_and_presentation() -> None:
    token = TOKENS["gitlab"]
    update = ToolUpdate("c1", "run_tests", content=f"out: {token}", details={"log": [token]}, presentation=ToolPresentation(label="Run", detail=token))
    clean = redact_update(update)
    assert token not in repr(clean) and clean.call_id == "c1" and clean.presentation.detail == REDACTED  # type: ignore[union-attr]
    quiet = ToolUpdate("c1", "run_tests", content="nothing here")
    assert redact_update(quiet) is quiet


_PART = st.sampled_from([*TOKENS.values(), "env-secret-value-1234", "plain words", "gh", "sk-", "://u:p@h", "tests/a.py::t", "", "\n"])


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    stream=st.lists(st.tuples(st.lists(_PART, max_size=6), st.lists(st.integers(), max_size=3)), min_size=1, max_size=5),
)
def test_the_update_redactor_agrees_with_the_exact_walk(stream: list[tuple[list[str], list[int]]]) -> None:
    """update_redactor's one-pass check (and its memo of strings already found clean, kept over
    a stream of updates) only skips updates the exact walk leaves alone."""
    env = {"DEPLOY_TOKEN": "env-secret-value-1234"}
    redact_one = update_redactor(env)
    for parts, numbers in stream:
        text = " ".join(parts)
        update = ToolUpdate(
            "c", "t", content=text, details={"out": parts, "n": numbers, "nested": {"k": text[:40]}},
            presentation=ToolPresentation(label="Run", detail=text[:60] or None),
        )
        fast = redact_one(update)
        exact = redact_update(update, environ=env)
        assert (fast.content, fast.details, fast.presentation) == (exact.content, exact.details, exact.presentation)
        if exact is update:
            assert fast is update


def test_the_update_redactor_walks_models_it_cannot_scan_fast() -> None:
    token = TOKENS["github"]
    update = ToolUpdate("c", "t", content="x", details={"shown": ToolPresentation(label="Run", detail=token)})
    clean = update_redactor({})(update)
    assert token not in repr(clean.details)


# --- secret files --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [".git-credentials", ".envrc", "sub/.envrc", ".pgpass", "certs/client.p12", ".gnupg/secring.gpg"])
def test_credential_files_are_secret_files(name: str) -> None:
    assert SecretPolicy().is_secret(name)
    assert not SecretPolicy(allowed=(name,)).is_secret(name)


def test_read_file_refuses_git_credentials_and_envrc(tmp_path: Path) -> None:
    import anyio

    from cogcli.contract.invoke import invoke_tool

    (tmp_path / ".git-credentials").write_text("https://me:" + TOKENS["github"] + "@github.com\n")
    (tmp_path / ".envrc").write_text("export TOKEN=" + TOKENS["gitlab"] + "\n")
    tools = {t.name: t for t in workspace_tools(tmp_path, include_git=False)}
    for name in (".git-credentials", ".envrc"):
        result = anyio.run(invoke_tool, tools["read_file"], {"path": name})
        assert result.error_code == "SECRET_FILE", name
    listed = anyio.run(invoke_tool, tools["search_text"], {"pattern": "github|TOKEN"})
    assert TOKENS["github"] not in json.dumps(listed.result) and TOKENS["gitlab"] not in json.dumps(listed.result)


@pytest.mark.parametrize("name", ["PGPASSWORD", "SECRETKEY", "APITOKEN", "MY_PASSPHRASE", "DJANGO_SECRET", "GITHUB_PAT"])
def test_env_values_under_run_together_names_are_redacted(name: str) -> None:
    text, n = redact("psql said: password hunter2-value-1234 refused", environ={name: "hunter2-value-1234"})
    assert "hunter2" not in text and n == 1
