"""The Python in the docs runs when pasted into a script (issue 43: a top-level ``await`` in
docs/adapters.md failed there): every ```python block of docs/ and the README compiles as a
module, and names nothing it does not define or import."""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
SNIPPETS = [(page, i, code) for page in PAGES for i, code in enumerate(BLOCK.findall(page.read_text(encoding="utf-8")))]


def _undefined_names(tree: ast.Module) -> set[str]:
    """Names a snippet reads that nothing in it binds (and are no builtins)."""
    bound = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return read - bound


@pytest.mark.parametrize(("page", "index", "code"), SNIPPETS, ids=[f"{p.name}#{i}" for p, i, _ in SNIPPETS])
def test_a_python_snippet_compiles_as_a_script(page: Path, index: int, code: str) -> None:
    tree = ast.parse(code, filename=f"{page.name} block {index}")  # a top-level await is a SyntaxError here
    compile(tree, f"{page.name} block {index}", "exec")
    assert not _undefined_names(tree), f"{page.name} block {index} uses names it never defines"


def test_there_are_snippets_to_check() -> None:
    assert any(page.name == "adapters.md" for page, _, _ in SNIPPETS)
