"""Nothing in the workspace decides what the sandbox shows, and what it shows carries no
credentials. Through the real ``cog tool run_tests``, as root and as an unprivileged user:

- a committed ``node_modules`` link out of the workspace (to the home, or a folder in it) lets a
  ``node --test`` test read a secret with ``--sandbox off``; sandboxed it does not, and the result
  says the link was not shown;
- a cargo test reads ``$CARGO_HOME/credentials.toml`` with ``--sandbox off``; sandboxed, cargo
  still builds and runs it offline, and the file is not there;
- the guard every read-only bind goes through (``sandbox_view.bindable``) refuses the hidden folders, the
  folders above them and paths reached through a link in the workspace; credential files in a
  folder it binds are covered.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from workspace_tools.sandbox import bwrap
from workspace_tools.sandbox import view as sandbox_view

from .conftest import Runner, needs_bwrap

pytestmark = needs_bwrap


def run_tests(runner: Runner, repo: Path, sandbox: str, env: dict[str, str] | None = None) -> dict:
    out = runner.cog(["tool", "run_tests", "--json", "--sandbox", sandbox], repo, env=env)
    assert out.returncode in (0, 1), out.stdout + out.stderr
    result = [json.loads(line) for line in out.stdout.splitlines() if line.strip()][-1]
    assert result["type"] == "tool-result" and "details" in result, json.dumps(result)[:3000]
    assert result["details"]["sandbox"] == ("bwrap" if sandbox == "on" else "none"), result
    return result


# -- a committed node_modules link out of the workspace -------------------------------------------

SECRET_TEST = """\
import assert from "node:assert/strict";
import {{ readFileSync }} from "node:fs";
import test from "node:test";

test("reads the secret through node_modules", () => {{
  let text = "";
  try {{ text = readFileSync(new URL("../node_modules/{name}", import.meta.url), "utf8"); }} catch {{}}
  assert.ok(text.includes("{secret}"), "the secret is not visible");
}});
"""


# (where the link leads, the package's test script)
LINKS = [
    ("the home", "node --test"),
    ("a folder in the home", "node --test test/secret.test.mjs"),
    # node --test searches the whole package and stops at the link, dangling in the sandbox
    ("a folder in the home", "node --test"),
]


@pytest.mark.parametrize(("target", "script"), LINKS, ids=["home", "folder", "folder-search"])
def test_a_node_modules_link_out_of_the_workspace_is_not_shown(runner: Runner, target: str, script: str) -> None:
    if shutil.which("node") is None:
        pytest.skip("NOT TESTED: node is not installed here (.ci/run installs it)")
    home = runner.base / "home"
    folder = home if target == "the home" else home / f"private-{uuid.uuid4().hex[:8]}"
    folder.mkdir(exist_ok=True)
    name, secret = f"secret-{uuid.uuid4().hex[:8]}.txt", f"hunter2-{uuid.uuid4().hex}"
    (folder / name).write_text(secret)
    runner.own(folder)
    repo = runner.make_repo({
        "package.json": json.dumps({"name": "stranger", "private": True, "scripts": {"test": script}}),
        "test/secret.test.mjs": SECRET_TEST.format(name=name, secret=secret),
    })
    (repo / "node_modules").symlink_to(folder)  # committed with the rest, as a cloned repository brings it
    runner.own(repo)
    runner.git(repo, "add", "-A")
    assert runner.git(repo, "commit", "-q", "-m", "modules").returncode == 0

    bare = run_tests(runner, repo, "off")
    assert (bare["details"]["outcome"], bare["details"]["passed"]) == ("passed", 1), "without the sandbox the link should show the secret"

    if target != "the home" and script == "node --test":
        out = runner.cog(["tool", "run_tests", "--json", "--sandbox", "on"], repo)
        error = [json.loads(line) for line in out.stdout.splitlines() if line.strip()][-1]["error"]
        assert "node did not start" in error and secret not in error, error
        notes = [error.split("\n")[-1]]  # the error says why: the link was not shown
    else:
        boxed = run_tests(runner, repo, "on")
        assert (boxed["details"]["outcome"], boxed["details"]["failed"]) == ("failed", 1), "the sandbox showed what the link points to"
        notes = [n for n in boxed["details"]["notes"] if "node_modules" in n]
        assert len(notes) == 1, boxed["details"]["notes"]
        assert notes[0] in str(boxed["result"])  # the model reads it too
    assert "node_modules is a link out of the workspace" in notes[0], notes
    assert str(folder.resolve()) in notes[0] and "--sandbox-writable" in notes[0], notes


# -- CARGO_HOME's credentials ------------------------------------------------------------------

CREDENTIALS_TEST = """\
#[test]
fn reads_the_registry_token() {
    let home = std::env::var("CARGO_HOME").expect("CARGO_HOME is set");
    let text = std::fs::read_to_string(format!("{home}/credentials.toml")).unwrap_or_default();
    assert!(text.contains("token"), "no credentials in CARGO_HOME");
}
"""


def test_cargo_home_credentials_are_not_shown_to_the_tests(runner: Runner) -> None:
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("NOT TESTED: cargo is not installed here (.ci/run installs it)")
    rustup_home = os.environ.get("RUSTUP_HOME") or str(Path.home() / ".rustup")  # the real toolchains
    probe = runner.run([cargo, "--version"], runner.base, env={"RUSTUP_HOME": rustup_home})
    if probe.returncode != 0:
        pytest.skip(f"NOT TESTED for {runner.name}: cargo ({cargo}) is not runnable by this user "
                    f"(rustup lives in another user's home): {probe.stderr.strip()[:200]}")
    # the person's CARGO_HOME, in their home: its bin/ is the real one (a rustup proxy), its
    # credentials.toml holds a registry token
    cargo_home = runner.base / "home" / f".cargo-{uuid.uuid4().hex[:8]}"
    (cargo_home / "bin").mkdir(parents=True)
    (cargo_home / "bin" / "cargo").symlink_to(os.path.realpath(cargo))
    token = "cio" + uuid.uuid4().hex
    (cargo_home / "credentials.toml").write_text(f'[registry]\ntoken = "{token}"\n')
    runner.own(cargo_home)
    env = {"CARGO_HOME": str(cargo_home), "RUSTUP_HOME": rustup_home,
           "PATH": f"{cargo_home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    repo = runner.make_repo({
        "Cargo.toml": '[package]\nname = "stranger"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
        "src/lib.rs": "pub fn one() -> u32 { 1 }\n",
        "tests/token.rs": CREDENTIALS_TEST,
        ".gitignore": "target/\n",
    })

    bare = run_tests(runner, repo, "off", env)
    assert (bare["details"]["outcome"], bare["details"]["passed"]) == ("passed", 1), str(bare["result"])

    boxed = run_tests(runner, repo, "on", env)
    assert (boxed["details"]["outcome"], boxed["details"]["failed"]) == ("failed", 1), str(boxed["result"])
    assert "no credentials in CARGO_HOME" in str(boxed["result"])  # cargo built and ran it: only the file was missing


# -- the guard -----------------------------------------------------------------------------------


def test_the_guard_refuses_the_hidden_folders_those_above_them_and_links_in_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "outside"
    (outside / "lib").mkdir(parents=True)
    (workspace / "node_modules").symlink_to(outside)  # a link in the workspace, out of it
    (tmp_path / "via").symlink_to(workspace / "node_modules")  # a link outside that passes through it
    (workspace / "inner").mkdir()
    home = sandbox_view.home_dir()
    refused = ["/", "/tmp", "/run", "/var/run", "/var/tmp", "/dev/shm", "/var", "/dev",
               str(workspace / "node_modules"), str(workspace / "node_modules" / "lib"), str(tmp_path / "via" / "lib"),
               str(workspace / "inner"), str(workspace), str(tmp_path / "missing"), "relative/path"]
    if home is not None:
        refused += [str(home), *(str(p) for p in home.parents)]
    for path in refused:
        assert not sandbox_view.bindable(Path(path), workspace), path
        assert sandbox_view.bind_refusal(Path(path), workspace), path
    assert "a link in the workspace" in sandbox_view.bind_refusal(tmp_path / "via" / "lib", workspace)
    for path in (outside, outside / "lib", Path("/usr/lib"), *([home / ".cargo"] if home is not None else [])):
        if path.exists():
            assert sandbox_view.bindable(path, workspace), (path, sandbox_view.bind_refusal(path, workspace))

    # and in the sandbox's command line: none of them is bound back, and the link is in the notes
    notes: list[str] = []
    argv = bwrap.sandbox_prefix("on", workspace, [Path(p) for p in refused if p.startswith("/")], notes=notes)
    binds = {argv[i + 1] for i, word in enumerate(argv) if word == "--ro-bind"}
    assert not binds & {str(Path(p).resolve()) for p in refused if p.startswith("/") and Path(p).exists()} - {"/"}
    assert len(notes) == 1 and "node_modules" in notes[0] and str(outside) in notes[0], notes


def test_credential_files_in_a_bound_folder_are_covered(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    tool = tmp_path / "tool"  # in /tmp, which the sandbox hides: bound back read-only
    (tool / "etc").mkdir(parents=True)
    (tool / "deep" / ".docker").mkdir(parents=True)
    (tool / "lib.txt").write_text("needed")
    secrets = [tool / ".npmrc", tool / "etc" / "npmrc", tool / "credentials.toml", tool / "deep" / ".docker" / "config.json"]
    for path in secrets:
        path.write_text("//registry.npmjs.org/:_authToken=npm_" + "a" * 36)
    paths = ["lib.txt", *(str(p.relative_to(tool)) for p in secrets)]
    script = "for f in " + " ".join(paths) + '; do printf "%s=%s\\n" "$f" "$(cat "$f" 2>&1)"; done'

    bare = subprocess.run(["sh", "-c", script], cwd=tool, capture_output=True, text=True)
    assert bare.stdout.count("_authToken") == len(secrets), bare.stdout  # the files are there to read

    prefix = bwrap.sandbox_prefix("on", workspace, [tool])
    boxed = subprocess.run([*prefix, "sh", "-c", f"cd {tool} && {script}"], capture_output=True, text=True, timeout=60)
    assert "lib.txt=needed" in boxed.stdout, boxed.stdout + boxed.stderr  # the folder is shown
    for path in paths[1:]:
        assert f"{path}=\n" in boxed.stdout, boxed.stdout  # its credential files are there, and empty


def test_credentials_at_the_top_of_a_toolchain_home_the_sandbox_shows_are_covered(tmp_path: Path, monkeypatch) -> None:
    # a CARGO_HOME the sandbox shows without a bind (as /usr/local/cargo in a Rust image): here a
    # folder of the real home while the sandbox hides another home
    cargo_home = Path(tempfile.mkdtemp(prefix=".cog-cargo-home-", dir=Path.home()))
    try:
        (cargo_home / "bin").mkdir()
        (cargo_home / "credentials.toml").write_text('[registry]\ntoken = "cio' + uuid.uuid4().hex + '"\n')
        (tmp_path / "home").mkdir()
        (tmp_path / "ws").mkdir()
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        monkeypatch.setenv("CARGO_HOME", str(cargo_home))
        read = ["cat", str(cargo_home / "credentials.toml")]
        assert "token" in subprocess.run(read, capture_output=True, text=True).stdout
        prefix = bwrap.sandbox_prefix("on", tmp_path / "ws", [])
        boxed = subprocess.run([*prefix, *read], capture_output=True, text=True, timeout=60)
        assert boxed.returncode == 0 and boxed.stdout == "", boxed.stdout + boxed.stderr  # there, and empty
    finally:
        shutil.rmtree(cargo_home)


def test_the_go_module_cache_is_the_one_part_of_gopath_bound(tmp_path: Path, monkeypatch) -> None:
    from workspace_tools.runners.go import module_cache

    monkeypatch.delenv("GOMODCACHE", raising=False)
    monkeypatch.setenv("GOPATH", f"{tmp_path / 'first'}{os.pathsep}{tmp_path / 'second'}")
    assert module_cache() == tmp_path / "first" / "pkg" / "mod"
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "cache"))
    assert module_cache() == tmp_path / "cache"
