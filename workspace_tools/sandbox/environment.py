"""The environment a workspace's tests run with: an allow-list, never credentials.

Tests (and whatever a model wrote into them) get the variables a test run needs — the search
path, locale, terminal, the virtualenv's, CI markers, build tool settings — and nothing named
like a credential, whatever its name's prefix: provider keys, ``*_TOKEN``, ``*_PASSWORD``, … A
suite that really needs more names them:

- ``--pass-env NAME`` (repeatable; the CLI puts them in ``COG_PASS_ENV``): the person's choice, so
  it may pass anything, a credential included;
- ``[tool.cog] pass_env = ["NAME"]`` in the workspace: the workspace's wish, so it never passes a
  credential-named variable (use ``--pass-env`` for one).

Whatever a test is handed may come back in its output, encoded any way the test likes. So the
values of the variables passed beyond the allow-list, and every URL credential in any value handed
out (a ``user:password@`` in ``GOPROXY``, ``DATABASE_URL``, ``PIP_INDEX_URL``, ``HTTPS_PROXY``),
are made secrets of the run (:func:`cogcli.secrets.environment.remember_run_secrets`): redacted from
every result and update, as they are and in every encoding the redactor knows.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cogcli.secrets.environment import remember_run_secrets, url_credentials

log = logging.getLogger("cogcli")

#: names the person passed (``--pass-env``), comma or space separated
PASS_ENV = "COG_PASS_ENV"
#: names the workspace's ``[tool.cog] pass_env`` asked for (never credentials)
WORKSPACE_PASS_ENV = "COG_WORKSPACE_PASS_ENV"

ALLOWED = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "COLORTERM", "TZ", "TMPDIR",
        "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "PWD",
        # Python and its virtualenvs
        "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYTHONPATH", "PYTHONHASHSEED", "PYTHONUTF8",
        "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE", "PYTHONWARNINGS", "PYTHONFAULTHANDLER", "PYTHONDEVMODE",
        "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "COVERAGE_PROCESS_START",
        # CI markers (tests change behaviour on them; no secrets)
        "CI", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "CIRCLECI", "TRAVIS", "JENKINS_URL", "TF_BUILD",
        # other toolchains
        "GOPATH", "GOROOT", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOTOOLCHAIN", "GOPROXY", "GOSUMDB", "GONOSUMDB",
        "GOPRIVATE", "CGO_ENABLED", "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "RUSTFLAGS",
        "CARGO_TARGET_DIR", "CARGO_TERM_COLOR", "NODE_PATH", "NODE_ENV", "NVM_DIR", "JAVA_HOME", "CC", "CXX",
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "LD_LIBRARY_PATH", "PKG_CONFIG_PATH",
        "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
    }
)
ALLOWED_PREFIXES = ("LC_",)

#: what tells the package tools a test or command may start that the network is off, through their
#: own settings, so a step that needs it fails at once instead of retrying for a minute (npm retries
#: a name that does not resolve for about 70 s): set in the sandbox unless the person gave it the
#: network (``--test-network``, ``--command-network``). Each was checked against a real run:
#: ``npx missing-package`` ends in ENOTCACHED within a second, ``cargo fetch`` says it is offline,
#: ``pip install`` finds no index
OFFLINE_ENV = {
    "npm_config_offline": "true",  # npm, npx (and pnpm, which reads npm's settings)
    "npm_config_audit": "false",
    "npm_config_fund": "false",
    "npm_config_update_notifier": "false",
    "PIP_NO_INDEX": "1",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "CARGO_NET_OFFLINE": "true",
}

#: a variable named like any of these is a credential (checked on the upper-cased name's parts)
_CREDENTIAL = re.compile(
    r"(KEY|KEYS|TOKEN|TOKENS|SECRET|SECRETS|PASSWORD|PASSWD|PASS|PWD|CREDENTIAL|CREDENTIALS|CREDS|AUTH|"
    r"AUTHORIZATION|COOKIE|SESSION|PRIVATE|SIGNATURE|CERT_KEY|APIKEY|ACCESS|OAUTH|BEARER|DSN|WEBHOOK|PAT|PASSPHRASE)"
)
#: … or holding one of these run together with other words (``PGPASSWORD``, ``SECRETKEY``, ``APITOKEN``)
_CREDENTIAL_WORD = re.compile(r"PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN(?!IZ)|APIKEY|PRIVATEKEY|ACCESSKEY|CREDENTIAL")
#: providers whose every variable is kept out (keys hide under many names)
_PROVIDER_PREFIXES = ("OPENAI_", "ANTHROPIC_", "AWS_", "AZURE_", "GOOGLE_", "GCP_", "GEMINI_", "MISTRAL_",
                      "GROQ_", "COHERE_", "HF_", "HUGGING", "OPENROUTER_", "DEEPSEEK_", "XAI_", "TOGETHER_",
                      "REPLICATE_", "VERTEX", "GH_", "GITHUB_TOKEN", "NPM_", "PYPI_", "TWINE_", "DOCKER_",
                      "COG_API", "SSH_AUTH_SOCK", "GPG_", "VAULT_")


_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_variable_name(name: object) -> bool:
    """Whether ``name`` can name an environment variable: letters, digits and ``_``, not starting
    with a digit (what every setting, task file and hook that names variables accepts)."""
    return isinstance(name, str) and _VARIABLE_NAME.fullmatch(name) is not None


def is_credential_name(name: str) -> bool:
    """True for names a credential hides under: ``OPENAI_API_KEY``, ``GH_TOKEN``, ``DB_PASSWORD``, …"""
    upper = name.upper()
    if upper in ("PWD",):
        return False  # the working directory, not a password
    if upper.startswith(_PROVIDER_PREFIXES):
        return True
    return any(_CREDENTIAL.fullmatch(part) for part in re.split(r"[_\-.]", upper) if part) or bool(_CREDENTIAL_WORD.search(upper))


def _names(raw: str) -> list[str]:
    return [n for n in re.split(r"[,\s]+", raw) if n]


def passed_names(environ: Mapping[str, str] | None = None) -> tuple[set[str], set[str]]:
    """(names the person passed, names the workspace asked for) from the environment cog runs in."""
    environ = os.environ if environ is None else environ
    return set(_names(environ.get(PASS_ENV, ""))), set(_names(environ.get(WORKSPACE_PASS_ENV, "")))


def child_environment(
    extra: Mapping[str, str] = {},
    *,
    environ: Mapping[str, str] | None = None,
    pass_env: Iterable[str] = (),
    workspace_pass_env: Iterable[str] = (),
) -> dict[str, str]:
    """The environment for a test process: the allow-listed variables of ``environ`` (default: cog's
    own), the names passed on top, then ``extra`` (cog's own settings for the run)."""
    environ = os.environ if environ is None else environ
    person, workspace = passed_names(environ)
    person |= set(pass_env)
    workspace |= set(workspace_pass_env)
    env: dict[str, str] = {}
    for name, value in environ.items():
        if name in person:
            env[name] = value
        elif is_credential_name(name):
            continue
        elif name in ALLOWED or name.startswith(ALLOWED_PREFIXES) or name in workspace:
            env[name] = value
    refused = sorted(n for n in workspace - person if is_credential_name(n) and n in environ)
    if refused:
        log.warning(
            "[tool.cog] pass_env asks for %s, named like credentials: not passed to the tests "
            "(pass one yourself with --pass-env NAME)",
            ", ".join(refused),
        )
    # what the tests get beyond the allow-list, and any URL's credentials: secrets of this run
    remember_run_secrets(value for name, value in env.items() if not _allowed(name))
    remember_run_secrets(c for value in env.values() for c in url_credentials(value))
    env.update(extra)
    return env


def _allowed(name: str) -> bool:
    return name in ALLOWED or name.startswith(ALLOWED_PREFIXES)


@dataclass(frozen=True)
class PassedEnv:
    """What one workspace's tests are given beyond the allow-list, handed to ``run_tests``
    explicitly: never through cog's own environment, which every session in the process shares
    (a name passed for one repository must not reach another's tests)."""

    #: names the person passes (``--pass-env``, ``COG_PASS_ENV``, their config): any, credentials too
    pass_env: tuple[str, ...] = ()
    #: names the workspace's settings ask for (``pass_env`` in cog.toml): never credential-named ones
    workspace_pass_env: tuple[str, ...] = ()
    #: more paths the tests may write in the sandbox (None: ``COG_SANDBOX_WRITABLE`` of cog's environment)
    writable: tuple[Path, ...] | None = None
    #: the person gives the tests the host's network in the sandbox (``--test-network``; never the workspace)
    network: bool = False

    def child_env(self, extra: Mapping[str, str], sandboxed: bool, *, network: bool | None = None) -> dict[str, str]:
        """The one place the tests' environment is made: the allow-listed variables (no
        credentials), the names passed, then the runner's ``extra`` ones. In the sandbox without
        the network (``network``: the step's own choice, default :attr:`network`) the package
        tools are told they are offline (:data:`OFFLINE_ENV`)."""
        offline = sandboxed and not (self.network if network is None else network)
        env = child_environment({**(OFFLINE_ENV if offline else {}), **extra}, pass_env=self.pass_env,
                                workspace_pass_env=self.workspace_pass_env)
        if sandboxed:
            env["TMPDIR"] = "/tmp"  # the sandbox's private /tmp is the only writable place besides the workspace
        return env
