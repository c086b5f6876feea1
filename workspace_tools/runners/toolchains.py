"""A runner's toolchain (go, cargo, node) on the host: what the sandbox shows of it, and what to
say when it is not installed — a clear tool error naming it and how to install it, before anything
starts (with the sandbox or without), never a traceback."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from workspace_tools.host.programs import host_program

#: a toolchain's program -> (what people call it, how to install it)
INSTALL = {
    "go": ("Go", "install golang-go (apt install golang-go) or Go from https://go.dev/dl"),
    "cargo": ("Rust's cargo", "install Rust with rustup (https://rustup.rs) or apt install cargo"),
    "node": ("Node.js", "install nodejs and npm (apt install nodejs npm) or Node.js from https://nodejs.org"),
    "npm": ("npm", "install npm (apt install npm); it comes with Node.js from https://nodejs.org"),
    "npx": ("npx", "install npm (apt install npm); it comes with Node.js from https://nodejs.org"),
    "yarn": ("Yarn", "install it (corepack enable, or npm install -g yarn)"),
    "pnpm": ("pnpm", "install it (corepack enable, or npm install -g pnpm)"),
}


def missing_program(toolchain: str | None, argv: list[str], path: str) -> str | None:
    """The message when the runner's toolchain, or the program its command starts, is not on
    ``path`` (the tests' ``PATH``), else None."""
    for program in dict.fromkeys(p for p in (toolchain, argv[0] if argv else None) if p):
        if os.sep in program and os.access(program, os.X_OK):
            continue
        if shutil.which(program, path=path) is not None:
            continue
        name, install = INSTALL.get(os.path.basename(program), (program, f"install {program}"))
        return (f"{name} is not installed (or not on PATH): {install}, then run the tests again "
                f"(PATH searched: {path or '(empty)'})")
    return None


def toolchain_homes(program_name: str | None) -> list[Path]:
    """What the runner's toolchain needs to build and run offline, when it lies in a folder the
    sandbox hides (the home): bound read-only, each through :func:`~workspace_tools.sandbox.view.bindable`.

    Found from the program on the person's ``PATH`` and their environment (``CARGO_HOME``, ``GOROOT``
    …), never from a workspace file. Only the parts a build reads, not the toolchain's home: cargo's
    ``bin/``, ``registry/`` and ``git/`` and rustup's ``toolchains/``, ``settings.toml`` and
    ``update-hashes/`` (not ``credentials.toml``); Go's root (its module cache is the Go runner's);
    Node's installation (``bin/``, ``lib/node_modules/``, ``include/node/``), for vitest and jest too.
    """
    found = host_program(program_name) if program_name else None
    if found is None:
        return []
    home = Path.home()
    program = Path(found).resolve()
    installation = program.parent.parent  # …/bin/cargo -> the installation
    paths: list[Path] = []
    if program_name == "cargo":
        cargo_home = Path(os.environ.get("CARGO_HOME") or home / ".cargo")
        rustup_home = Path(os.environ.get("RUSTUP_HOME") or home / ".rustup")
        paths += [cargo_home / part for part in ("bin", "registry", "git")]
        paths += [rustup_home / part for part in ("toolchains", "settings.toml", "update-hashes")]
        if (installation / "lib" / "rustlib").is_dir():  # a standalone install (no rustup), perhaps in ~/.local
            paths += [installation / part for part in ("bin", "lib", "libexec")]
    elif program_name == "go":
        goroot = Path(os.environ["GOROOT"]) if os.environ.get("GOROOT") else installation
        paths.append(goroot if (goroot / "src" / "runtime").is_dir() else program.parent)
    else:
        paths += [program.parent, installation / "lib" / "node_modules", installation / "include" / "node"]
    return [p for p in dict.fromkeys(paths) if p.is_absolute() and os.path.lexists(p)]
