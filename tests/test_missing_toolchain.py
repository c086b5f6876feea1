"""A project whose toolchain is not installed (issue 49): Go or cargo missing from PATH was a Python
traceback with ``--sandbox off`` and "cannot start 'go' … not shown inside the sandbox" with it.
Now both say which toolchain is missing and how to install it, as a tool error (exit 1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cli_helpers import run_cog
from conftest import init_git_repo

PROJECTS = {
    "go": ({"go.mod": "module example.com/m\n\ngo 1.21\n",
            "a_test.go": 'package m\n\nimport "testing"\n\nfunc TestA(t *testing.T) {}\n'},
           "Go is not installed (or not on PATH): install golang-go (apt install golang-go) or Go from https://go.dev/dl"),
    "cargo": ({"Cargo.toml": '[package]\nname = "x"\nversion = "0.1.0"\nedition = "2021"\n',
               "src/lib.rs": "#[test]\nfn a() {}\n"},
              "Rust's cargo is not installed (or not on PATH): install Rust with rustup (https://rustup.rs) or apt install cargo"),
}
TOOLCHAINS = {"go", "gofmt", "cargo", "rustc", "rustup", "rustdoc"}


def path_without_toolchains(tmp_path: Path) -> str:
    """A PATH folder holding the system's programs (bwrap, sh, git …), links to them, but no Go or Rust."""
    folder = tmp_path / "system-bin"
    folder.mkdir()
    for source in ("/usr/local/bin", "/usr/bin", "/bin"):
        for name in sorted(os.listdir(source)) if os.path.isdir(source) else ():
            if name not in TOOLCHAINS and not (folder / name).exists():
                (folder / name).symlink_to(os.path.join(source, name))
    return str(folder)


@pytest.mark.parametrize("toolchain", sorted(PROJECTS))
@pytest.mark.parametrize("sandbox", ["off", "auto"])
def test_a_missing_toolchain_is_a_tool_error_naming_how_to_install_it(tmp_path: Path, toolchain: str, sandbox: str) -> None:
    files, message = PROJECTS[toolchain]
    repo = tmp_path / "repo"
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    init_git_repo(repo)
    done = run_cog(["tool", "run_tests", "--sandbox", sandbox], repo, env={"PATH": path_without_toolchains(tmp_path)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith(f"✗ Run tests  all — TOOL_ERROR: {message}, then run the tests again"), done.stdout
    assert "Traceback" not in done.stdout + done.stderr and "FileNotFoundError" not in done.stdout + done.stderr
    assert "not shown inside the sandbox" not in done.stdout
