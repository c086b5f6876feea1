"""Instruction files (AGENTS.md) found and ordered in real nested directories, as Codex reads them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cogcli.project.instructions import NearbyInstructions, instruction_names, load_instructions

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_root_to_cwd_joined_root_first_personal_before_all(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo", {
        "AGENTS.md": "root rules\n",
        "pkg/AGENTS.md": "pkg rules\n",
        "pkg/sub/AGENTS.md": "sub rules\n",
        "other/AGENTS.md": "not on the way\n",
    })
    personal = tree(tmp_path / "home", {"cog/AGENTS.md": "my own rules\n"}) / "cog/AGENTS.md"
    found = load_instructions(root, root / "pkg" / "sub", personal=personal)
    assert [f.path for f in found.files] == [str(personal), "AGENTS.md", "pkg/AGENTS.md", "pkg/sub/AGENTS.md"]
    assert [f.directory for f in found.files] == [None, "", "pkg", "pkg/sub"]
    section = found.prompt_section()
    assert section.index("my own rules") < section.index("root rules") < section.index("pkg rules") < section.index("sub rules")
    assert "not on the way" not in section
    assert found.files[1].info() == {"path": "AGENTS.md", "size": len("root rules\n")}


def test_override_beats_plain_and_configured_names_come_last(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "AGENTS.override.md": "override\n",
        "AGENTS.md": "plain\n",
        "a/CLAUDE.md": "claude only\n",
        "a/b/AGENTS.md": "b agents\n",
        "a/b/CLAUDE.md": "b claude\n",
    })
    names = instruction_names(["CLAUDE.md"])
    found = load_instructions(root, root / "a" / "b", names=names)
    assert [f.path for f in found.files] == ["AGENTS.override.md", "a/CLAUDE.md", "a/b/AGENTS.md"]
    assert "plain" not in found.prompt_section() and "b claude" not in found.prompt_section()
    # without the configured name, CLAUDE.md is not read
    assert [f.path for f in load_instructions(root, root / "a").files] == ["AGENTS.override.md"]


def test_the_budget_is_spent_from_the_root_and_the_cut_is_visible(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "AGENTS.md": "r" * 99 + "\n",  # 100 bytes
        "x/AGENTS.md": "".join(f"line {i:03d}\n" for i in range(30)),  # 270 bytes
        "x/y/AGENTS.md": "deepest\n",
    })
    found = load_instructions(root, root / "x" / "y", budget=250)
    assert [f.path for f in found.files] == ["AGENTS.md", "x/AGENTS.md"]
    root_file, cut_file = found.files
    assert root_file.cut == 0
    assert cut_file.cut > 0 and cut_file.text.endswith("\n") and len(cut_file.text.encode()) <= 150
    assert cut_file.info()["cut"] == cut_file.cut
    assert any("x/AGENTS.md cut" in n for n in found.notes)
    assert any("x/y/AGENTS.md" in n and "not read" in n for n in found.notes)
    assert "instruction budget ran out" in found.prompt_section()
    assert "x/y/AGENTS.md (8 bytes) not read" in found.prompt_section()  # the model knows it exists


def test_a_dot_directory_keeps_its_name(tmp_path: Path) -> None:
    root = tree(tmp_path, {"AGENTS.md": "root\n", ".config/AGENTS.md": "dot\n"})
    assert [f.directory for f in load_instructions(root, root / ".config").files] == ["", ".config"]


def test_budget_zero_reads_nothing(tmp_path: Path) -> None:
    root = tree(tmp_path, {"AGENTS.md": "rules\n"})
    personal = tree(tmp_path, {"p/AGENTS.md": "mine\n"}) / "p/AGENTS.md"
    found = load_instructions(root, budget=0, personal=personal)
    assert found.files == [] and found.prompt_section() == ""


def test_credentials_in_an_instruction_file_are_redacted(tmp_path: Path) -> None:
    root = tree(tmp_path, {"AGENTS.md": f"deploy with {GITHUB_TOKEN}\n", "sub/AGENTS.md": f"also {GITHUB_TOKEN}\n", "sub/a.py": "x = 1\n"})
    found = load_instructions(root)
    assert GITHUB_TOKEN not in found.prompt_section() and "[REDACTED]" in found.prompt_section()
    assert found.files[0].redacted == 1
    note = NearbyInstructions(root, found.files).notice({"path": "sub/a.py"})
    assert note is not None and GITHUB_TOKEN not in note and "[REDACTED]" in note


def test_a_symlink_out_of_the_workspace_is_not_read(tmp_path: Path) -> None:
    secret = tree(tmp_path, {"outside/id_rsa": "PRIVATE STUFF\n"}) / "outside/id_rsa"
    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    os.symlink(secret, root / "AGENTS.md")
    os.symlink(secret, root / "sub" / "AGENTS.md")
    (root / "sub" / "a.py").write_text("x\n")
    found = load_instructions(root)
    assert found.files == []
    assert NearbyInstructions(root, found.files).notice({"path": "sub/a.py"}) is None


def test_a_subdirectory_file_is_told_once_nearest_last(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "AGENTS.md": "root\n",
        "svc/AGENTS.md": "svc rules\n",
        "svc/api/AGENTS.md": "api rules\n",
        "svc/api/h.py": "x\n",
        "svc/api/g.py": "y\n",
        "docs/readme.md": "no instructions here\n",
    })
    found = load_instructions(root)
    nearby = NearbyInstructions(root, found.files)
    assert nearby.notice({"path": "docs/readme.md"}) is None
    note = nearby.notice({"path": "svc/api/h.py"})
    assert note is not None
    assert note.index("svc rules") < note.index("api rules")  # the nearest last: it wins for its subtree
    assert "svc/api/AGENTS.md" in note and "apply to svc/api/" in note
    assert nearby.notice({"path": "svc/api/g.py"}) is None  # told once
    assert nearby.notice({"path": "svc"}) is None
    assert [f.path for f in nearby.told] == ["svc/AGENTS.md", "svc/api/AGENTS.md"]
    assert nearby.notice({"path": "../../etc/passwd"}) is None and nearby.notice({"text": "svc/api/h.py"}) is None


def test_a_file_loaded_at_the_start_is_not_told_again(tmp_path: Path) -> None:
    root = tree(tmp_path, {"AGENTS.md": "root\n", "pkg/AGENTS.md": "pkg\n", "pkg/a.py": "x\n"})
    found = load_instructions(root, root / "pkg")
    assert NearbyInstructions(root, found.files).notice({"path": "pkg/a.py"}) is None


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=5), budget=st.integers(min_value=1, max_value=1500))
def test_budget_property_never_more_than_the_budget_and_root_first(tmp_path_factory: pytest.TempPathFactory, sizes: list[int], budget: int) -> None:
    root = tmp_path_factory.mktemp("b")
    d = root
    for i, size in enumerate(sizes):
        (d / "AGENTS.md").write_text(("é" if i % 2 else "a") * size, encoding="utf-8")
        d = d / f"d{i}"
        d.mkdir()
    found = load_instructions(root, d, budget=budget)
    assert sum(len(f.text.encode()) for f in found.files) <= budget
    # read whole from the root down until one is cut; nothing after a cut one is read
    for earlier, later in zip(found.files, found.files[1:]):
        assert earlier.cut == 0 and len(earlier.path) < len(later.path)
