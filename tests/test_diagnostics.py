"""Diagnostics after a file change, on real projects with their real checkers (ruff, mypy, go vet, tsc,
cargo check) in the tests' sandbox: a change is told what it introduced or fixed, never the backlog."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from cogcli.contract.details import DiagnosticsDetails
from cogcli.contract.invoke import invoke_tool
from conftest import init_git_repo
from runner_fixtures import copy_project, need
from workspace_tools import Workspace, workspace_tools
from workspace_tools.diagnostics.after_change import with_diagnostics
from workspace_tools.diagnostics.checker import Checker
from workspace_tools.diagnostics.tool import diagnostics_tool
from workspace_tools.files.edit import edit_file_tool

pytestmark = pytest.mark.anyio

MYPY_PROJECT = {
    "pyproject.toml": '[project]\nname = "shop"\nversion = "0"\n\n[tool.mypy]\nwarn_unused_ignores = true\n',
    "shop/__init__.py": "",
    "shop/prices.py": "def total(prices: list[float]) -> float:\n    return sum(prices)\n\n\ndef label(amount: float) -> str:\n    return f\"{amount:.2f}\"\n",
}


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "project"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return init_git_repo(root)


def tools(root: Path, **options: Any) -> dict[str, Any]:
    return {t.name: t for t in workspace_tools(root, diagnostics=True, **options)}


async def call(tool: Any, args: dict[str, Any]) -> Any:
    result = await invoke_tool(tool, args)
    assert result.error is None, result.error
    return result


def verdict(result: Any) -> DiagnosticsDetails:
    return DiagnosticsDetails.model_validate(result.details["diagnostics"])


async def test_an_edit_adding_a_lint_error_to_a_file_with_hundreds_reports_that_one(tmp_path: Path) -> None:
    backlog = "".join(f"value_{i} = undefined_name_{i}\n" for i in range(300))  # 300 F821 the project already has
    root = project(tmp_path, {"pyproject.toml": '[project]\nname = "old"\nversion = "0"\n', "legacy.py": backlog})
    made = tools(root)
    result = await call(made["edit_file"], {"path": "legacy.py", "old_text": "value_0 = undefined_name_0\n",
                                            "new_text": "import json\n\nvalue_0 = undefined_name_0\n"})
    found = verdict(result)
    assert [(d.file, d.line, d.rule) for d in found.new] == [("legacy.py", 1, "F401")]
    assert found.existing == 300 and found.fixed == [] and "ruff" in found.sources
    assert result.result["diagnostics"].splitlines() == ["diagnostics: 1 new error", "legacy.py:1: F401: `json` imported but unused"]
    assert result.presentation.detail == "legacy.py · 1 new error"
    # the next edit starts from what this one's check found: removing the import is reported as fixed
    fixed = verdict(await call(made["edit_file"], {"path": "legacy.py", "old_text": "import json\n\n", "new_text": ""}))
    assert [d.rule for d in fixed.fixed] == ["F401"] and fixed.new == [] and fixed.existing == 300


async def test_a_type_error_and_a_syntax_error_in_python_are_told_exactly(tmp_path: Path) -> None:
    root = project(tmp_path, MYPY_PROJECT)
    made = tools(root)
    typed = await call(made["edit_file"], {"path": "shop/prices.py", "old_text": 'return f"{amount:.2f}"', "new_text": "return amount"})
    found = verdict(typed)
    assert [(d.source, d.line, d.rule) for d in found.new] == [("mypy", 6, "return-value")]
    assert 'shop/prices.py:6: return-value: Incompatible return value type (got "float", expected "str")' in typed.result["diagnostics"]
    broken = verdict(await call(made["edit_file"], {"path": "shop/prices.py", "old_text": "def total(prices: list[float]) -> float:",
                                                    "new_text": "def total(prices: list[float]) -> float"}))
    assert {d.source for d in broken.new} == {"ruff", "mypy"} and all(d.line == 1 for d in broken.new)
    assert broken.fixed == []  # the type error is hidden by the syntax error, not fixed


async def test_write_move_and_apply_patch_are_checked_too(tmp_path: Path) -> None:
    root = project(tmp_path, MYPY_PROJECT)
    made = tools(root)
    written = await call(made["write_file"], {"path": "shop/tax.py", "content": "import os\n\nRATE: int = 0.2\n"})
    assert sorted((d.source, d.rule) for d in verdict(written).new) == [("mypy", "assignment"), ("ruff", "F401")]
    moved = verdict(await call(made["move_file"], {"path": "shop/tax.py", "new_path": "shop/vat.py"}))
    assert moved.new == [] and moved.fixed == [] and moved.existing == 2 and moved.files == ["shop/vat.py"]
    patch = "\n".join(["*** Begin Patch", "*** Update File: shop/vat.py", "@@", "-import os", "+import sys",
                       "*** Add File: shop/extra.py", "+def twice(n: int) -> int:", "+    return n * 2", "*** End Patch", ""])
    patched = await invoke_tool(made["apply_patch"], {"patch": patch})
    assert patched.error is None, patched.error
    found = verdict(patched)
    assert [(d.file, d.rule, d.message) for d in found.new] == [("shop/vat.py", "F401", "`sys` imported but unused")]
    assert [d.message for d in found.fixed] == ["`os` imported but unused"]
    assert "diagnostics: 1 new error, 1 fixed" in patched.result


async def test_a_clean_change_says_nothing_to_the_model(tmp_path: Path) -> None:
    root = project(tmp_path, MYPY_PROJECT)
    result = await call(tools(root)["edit_file"], {"path": "shop/prices.py", "old_text": "return sum(prices)", "new_text": "return float(sum(prices))"})
    assert "diagnostics" not in result.result and verdict(result).new == [] and verdict(result).sources == ["ruff", "mypy"]


async def test_a_checker_over_its_budget_is_skipped_with_a_note_and_runs_with_the_tool(tmp_path: Path) -> None:
    root = project(tmp_path, MYPY_PROJECT)
    checker = Checker(Workspace(root), types_budget=0.01)  # no type checker starts in 10 ms
    made = {"edit_file": with_diagnostics(edit_file_tool(Workspace(root)), checker), "diagnostics": diagnostics_tool(checker)}
    result = await call(made["edit_file"], {"path": "shop/prices.py", "old_text": 'return f"{amount:.2f}"', "new_text": "return amount"})
    found = verdict(result)
    assert "mypy" not in found.sources and [s.source for s in found.skipped] == ["mypy"]
    assert "mypy took longer than its 0.01 s budget; call diagnostics to run it" in result.result["diagnostics"]
    later = verdict(await call(made["edit_file"], {"path": "shop/prices.py", "old_text": "def total", "new_text": "def grand_total"}))
    assert [s.why for s in later.skipped] == ["skipped after changes: it once took longer than its 0.01 s budget; call diagnostics to run it"]
    checked = await call(made["diagnostics"], {"paths": ["shop"]})
    assert [(d.file, d.rule) for d in DiagnosticsDetails.model_validate(checked.details).problems] == [("shop/prices.py", "return-value")]
    assert checked.result.splitlines()[0] == "1 problem in 2 files (ruff, mypy)"
    assert checked.presentation is not None and checked.presentation.detail == "shop · 1 problem"  # the row, not "1 problems"


async def test_turned_off_per_source_and_missing_checkers_are_no_errors(tmp_path: Path) -> None:
    files = {**MYPY_PROJECT, "pyrightconfig.json": "{}"}  # pyright is configured but not installed here
    root = project(tmp_path, files)
    if shutil.which("pyright"):
        pytest.skip("pyright is installed here: this test needs a configured checker that is missing")
    result = await call(tools(root, diagnostics_off=["mypy"])["edit_file"],
                        {"path": "shop/prices.py", "old_text": 'return f"{amount:.2f}"', "new_text": "return amount"})
    found = verdict(result)
    assert found.sources == ["ruff"] and found.new == []
    assert [(s.source, s.why) for s in found.skipped] == [("mypy", "turned off (diagnostics_off)")]


async def test_without_diagnostics_a_change_is_not_checked(tmp_path: Path) -> None:
    root = project(tmp_path, MYPY_PROJECT)
    made = {t.name: t for t in workspace_tools(root)}
    result = await call(made["edit_file"], {"path": "shop/prices.py", "old_text": 'return f"{amount:.2f}"', "new_text": "return amount"})
    assert "diagnostics" not in result.details and "diagnostics" not in made


async def test_go_vet_reports_a_new_printf_mistake_and_a_syntax_error(tmp_path: Path) -> None:
    need("go", "apt install golang-go")
    root = project(tmp_path, {"go.mod": "module example.com/hello\n\ngo 1.19\n",
                              "main.go": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println("hello")\n}\n',
                              "old.go": 'package main\n\nimport "fmt"\n\nfunc old() {\n\tfmt.Printf("%s\\n", 1)\n}\n'})
    made = tools(root)
    result = await call(made["edit_file"], {"path": "main.go", "old_text": 'fmt.Println("hello")', "new_text": 'fmt.Printf("%d\\n", "hello")'})
    found = verdict(result)
    assert [(d.file, d.line, d.source) for d in found.new] == [("main.go", 6, "go-vet")]
    assert "wrong type string" in found.new[0].message
    broken = verdict(await call(made["edit_file"], {"path": "main.go", "old_text": "func main() {", "new_text": "func main() {{"}))
    assert [(d.file, d.rule) for d in broken.new] == [("main.go", "compile")] and broken.fixed == []


async def test_tsc_reports_a_new_type_error_and_not_the_projects_old_one(tmp_path: Path) -> None:
    need("node", "apt install nodejs")
    root = init_git_repo(copy_project("ts_diagnostics", tmp_path, modules="copy"))
    result = await call(tools(root)["edit_file"], {"path": "src/math.ts", "old_text": "return a + b;", "new_text": "return `${a + b}`;"})
    found = verdict(result)
    assert [(d.file, d.line, d.rule) for d in found.new] == [("src/math.ts", 2, "TS2322")]
    assert found.new[0].message == "Type 'string' is not assignable to type 'number'."
    assert all(d.file != "src/old.ts" for d in found.new)


@pytest.mark.slow
async def test_cargo_check_reports_a_new_type_error_once(tmp_path: Path) -> None:
    need("cargo", "rustup or apt install cargo")
    root = project(tmp_path, {"Cargo.toml": '[package]\nname = "adder"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
                              "src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"})
    result = await call(tools(root)["edit_file"], {"path": "src/lib.rs", "old_text": "    a + b", "new_text": "    let s: String = a + b;\n    s.len() as i32"})
    found = verdict(result)
    assert [(d.file, d.line, d.rule) for d in found.new] == [("src/lib.rs", 2, "E0308")]
    assert found.new[0].message == "mismatched types" and "cargo-check" in found.sources


async def test_the_setting_turns_it_off_for_a_session_and_the_workspace_may_turn_it_off(tmp_path: Path) -> None:
    from cogcli.session.factory import make_tools
    from cogcli.settings.load import load_settings

    root = project(tmp_path, MYPY_PROJECT)
    on = {t.name: t for t in make_tools(load_settings(root, environ={}))}
    assert "diagnostics" in on
    result = await call(on["edit_file"], {"path": "shop/prices.py", "old_text": 'return f"{amount:.2f}"', "new_text": "return amount"})
    assert [d.rule for d in verdict(result).new] == ["return-value"]
    assert "diagnostics" not in {t.name for t in make_tools(load_settings(root, environ={"COG_DIAGNOSTICS": "0"}))}
    only_ruff = load_settings(root, environ={"COG_DIAGNOSTICS_OFF": "mypy"})
    assert only_ruff.diagnostics_off == ("mypy",)
    (root / "cog.toml").write_text("diagnostics = false\n")
    assert load_settings(root, environ={}).diagnostics is False
    assert load_settings(root, environ={"COG_DIAGNOSTICS": "1"}).diagnostics is True  # the person's word over the workspace's
