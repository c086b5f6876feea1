"""The workspace boundary: every refused path names the path and why, and nothing outside is touched."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ws_helpers import call

from cogcli.contract.context import ToolContext
from cogcli.contract.errors import ConfigError, ErrorCode, ToolCallError
from workspace_tools import Workspace, workspace_tools
from workspace_tools.files.write import WriteFileParams, write_file_tool


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """tmp/outer/{root/, secret.txt, sibling/} with links in root pointing out and in."""
    outer = tmp_path / "outer"
    root = outer / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "inside.txt").write_text("inside\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (outer / "secret.txt").write_text("secret\n")
    (outer / "sibling").mkdir()
    (root / "link_out").symlink_to(outer / "sibling")
    (root / "file_out").symlink_to(outer / "secret.txt")
    (root / "up").symlink_to("..")
    (root / "abs_root").symlink_to("/")
    (root / "link_in").symlink_to("sub")
    (root / "sub" / "deep_out").symlink_to("../../sibling")
    return root


def refused(ws: Workspace, path: str, *, for_write: bool = False) -> str:
    with pytest.raises(ToolCallError) as info:
        ws.resolve(path, for_write=for_write)
    assert info.value.code == ErrorCode.PATH_OUTSIDE_WORKSPACE
    return info.value.message


def test_paths_inside_resolve_to_absolute_paths_under_the_root(layout: Path) -> None:
    ws = Workspace(layout)
    assert ws.root == layout.resolve()
    assert ws.resolve("sub/inside.txt") == layout / "sub" / "inside.txt"
    assert ws.resolve("./sub/../sub/inside.txt") == layout / "sub" / "inside.txt"
    assert ws.resolve(str(layout / "sub" / "new.txt"), for_write=True) == layout / "sub" / "new.txt"
    assert ws.resolve("link_in/inside.txt") == layout / "sub" / "inside.txt"  # a link inside stays inside
    assert ws.resolve("not/yet/there.py", for_write=True) == layout / "not" / "yet" / "there.py"
    assert ws.relative(ws.resolve("sub/inside.txt")) == "sub/inside.txt"
    assert ws.relative(ws.root) == "."


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../secret.txt", "'..' leads out of the workspace"),
        ("sub/../../secret.txt", "'..' leads out of the workspace"),
        ("/etc/passwd", "absolute path outside the workspace"),
        ("link_out/x.txt", "link_out is a symlink to"),
        ("file_out", "file_out is a symlink to"),
        ("up/secret.txt", "up is a symlink to"),
        ("abs_root/etc/passwd", "abs_root is a symlink to /"),
        ("sub/deep_out/new.txt", "sub/deep_out is a symlink to"),
        ("~/.bashrc", "home directory"),
        ("a\x00b", "NUL byte"),
    ],
)
def test_escapes_are_refused_naming_the_path_and_why(layout: Path, path: str, why: str) -> None:
    message = refused(Workspace(layout), path, for_write=True)
    assert why in message
    assert repr(path.replace("\x00", "\\0")) in message


def test_absolute_path_of_the_parent_is_refused(layout: Path) -> None:
    assert "absolute path outside" in refused(Workspace(layout), str(layout.parent / "secret.txt"))


def test_git_internals_are_readable_but_not_writable(layout: Path) -> None:
    ws = Workspace(layout)
    assert ws.resolve(".git/config") == layout / ".git" / "config"
    for path in (".git/config", ".git/hooks/pre-commit", "sub/../.git/HEAD", ".GIT/config", ".git"):
        assert ".git/ belong to git" in refused(ws, path, for_write=True)


def test_empty_path_and_a_missing_root_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ToolCallError) as info:
        Workspace(tmp_path).resolve("  ")
    assert info.value.code == ErrorCode.INVALID_ARGUMENTS
    with pytest.raises(ConfigError, match="not a directory"):
        Workspace(tmp_path / "missing")


def test_root_behind_a_symlink_accepts_absolute_paths_spelled_either_way(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(real)
    ws = Workspace(alias)
    assert ws.root == real
    assert ws.resolve(str(alias / "a.txt")) == real / "a.txt"
    assert ws.resolve(str(real / "a.txt")) == real / "a.txt"


def test_tools_refuse_escapes_and_touch_nothing(layout: Path) -> None:
    tools = workspace_tools(layout)
    outer = layout.parent
    before = (outer / "secret.txt").read_bytes(), sorted(os.listdir(outer / "sibling"))
    attempts = [
        ("read_file", {"path": "file_out"}),
        ("read_file", {"path": "../secret.txt"}),
        ("edit_file", {"path": "file_out", "old_text": "secret", "new_text": "leaked"}),
        ("write_file", {"path": "link_out/new.txt", "content": "x"}),
        ("write_file", {"path": "../secret.txt", "content": "x"}),
        ("write_file", {"path": str(outer / "secret.txt"), "content": "x"}),
        ("write_file", {"path": ".git/hooks/post-checkout", "content": "#!/bin/sh\n"}),
        ("list_files", {"path": "link_out"}),
        ("search_text", {"pattern": "secret", "path": "up"}),
    ]
    for name, args in attempts:
        result = call(tools, name, **args)
        assert result.error_code == ErrorCode.PATH_OUTSIDE_WORKSPACE, (name, args, result)
        assert result.presentation is not None  # a client still draws the refused call
    assert ((outer / "secret.txt").read_bytes(), sorted(os.listdir(outer / "sibling"))) == before
    assert not (layout / ".git" / "hooks").exists()


# -- property: no hostile path ever writes outside the root ----------------------------------------

_PARTS = ["..", "..", ".", "", "sub", "link_out", "file_out", "up", "abs_root", "link_in", ".git", ".GIT", "~",
          "secret.txt", "sibling", "etc", "passwd", "a" * 300, "x\x00y", "..\\..", "%2e%2e", "…", " ", "\ud800", "a\nb"]
_CHARS = "./~ab\x00\\é"


def _hostile_path(data: bytes) -> str:
    """Bytes drawn by hypothesis decoded into a path: a prefix, then known-nasty parts (low bytes)
    and free-form parts made of path-ish characters (high bytes). One cheap draw per example.
    ``{root}`` and ``{outer}`` stand for the sandbox's absolute paths."""
    prefixes = ["", "", "/", "//", "~/", "{root}/", "{outer}/", "/tmp/", "./", "../"]
    parts: list[str] = []
    free = ""
    for b in data[1:]:
        if b < 128:
            parts.append(_PARTS[b % len(_PARTS)])
        else:
            free += _CHARS[b % len(_CHARS)]
            if b % 3 == 0:
                parts.append(free)
                free = ""
    return prefixes[data[0] % len(prefixes)] + "/".join(parts + ([free] if free else []))


class Sandbox:
    """tmp/outer/{root/, secret.txt, sibling/} with links in root pointing out, in, up and to /."""

    def __init__(self, base: Path) -> None:
        self.outer = base / "outer"
        self.root = self.outer / "root"
        (self.root / "sub").mkdir(parents=True)
        (self.root / ".git").mkdir()
        (self.outer / "sibling").mkdir()
        (self.outer / "secret.txt").write_text("secret\n")
        (self.root / "link_out").symlink_to(self.outer / "sibling")
        (self.root / "file_out").symlink_to(self.outer / "secret.txt")
        (self.root / "up").symlink_to("..")
        (self.root / "abs_root").symlink_to("/")
        (self.root / "link_in").symlink_to("sub")
        self.workspace = Workspace(self.root)
        self.write = write_file_tool(self.workspace)
        self.before = self.outside_state()

    def outside_state(self) -> dict[str, tuple[int, int]]:
        """Every entry under ``outer`` except the root's own tree, with size and mtime."""
        state = {}
        for folder, dirs, files in os.walk(self.outer):
            if Path(folder) == self.outer:
                dirs[:] = [d for d in dirs if self.outer / d != self.root]
            for name in dirs + files:
                info = os.lstat(os.path.join(folder, name))
                state[os.path.join(folder, name)] = (info.st_size, info.st_mtime_ns)
        return state


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    base = Path(tempfile.mkdtemp(prefix="cog-ws-hostile-"))
    # durability is not what this test is about: skip fsync so 10,000 writes stay fast
    with mock.patch("workspace_tools.text.textfile.os.fsync"):
        yield Sandbox(base)
    shutil.rmtree(base, ignore_errors=True)


@settings(max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=st.binary(min_size=2, max_size=10))
def test_hostile_paths_never_write_outside_the_root(sandbox: Sandbox, data: bytes) -> None:
    path = _hostile_path(data).replace("{root}", str(sandbox.root)).replace("{outer}", str(sandbox.outer))
    try:
        resolved = sandbox.workspace.resolve(path, for_write=True)
    except ToolCallError as exc:
        assert exc.code in (ErrorCode.PATH_OUTSIDE_WORKSPACE, ErrorCode.INVALID_ARGUMENTS)
        resolved = None
    if resolved is not None:
        real = Path(os.path.realpath(resolved))
        assert real == sandbox.root or sandbox.root in real.parents
        assert ".git" not in [p.lower() for p in real.relative_to(sandbox.root).parts]
    try:
        sandbox.write.execute(WriteFileParams(path=path, content="pwned\n"), ToolContext("c1", "write_file"))
    except ToolCallError as exc:
        assert exc.code in (ErrorCode.PATH_OUTSIDE_WORKSPACE, ErrorCode.INVALID_ARGUMENTS, ErrorCode.TOOL_ERROR), exc
        assert resolved is not None or exc.code != ErrorCode.TOOL_ERROR
    else:
        assert resolved is not None, f"write_file accepted {path!r}, which resolve refuses"
    assert sandbox.outside_state() == sandbox.before
