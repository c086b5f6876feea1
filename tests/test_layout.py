"""The tree shows the architecture (issue 46): packages by concern, each saying what it is for, few
modules left at the top, no package too big to take in, no module too long to read, names that do
not differ by a letter, and one tool call's walk through the gate and execution short enough to follow.

The import layers between the packages are checked in ``tests/test_import_graph.py``; the walk is
measured by ``benchmarks/call_walk.py`` (it counts code, not time)."""

from __future__ import annotations

import ast
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOTS = ("cogcli", "workspace_tools")
#: lines a module may have (one concept per module; split one rather than grow it past this)
LIMIT = 450
#: modules a package may hold, besides its __init__
PACKAGE_LIMIT = 15
#: the modules that stay at the top: the public face, ``python -m cogcli``, the version
TOP = {"cogcli": {"__init__", "__main__", "version"}, "workspace_tools": {"__init__"}}


def python_files() -> list[Path]:
    return sorted(p for root in ROOTS for p in (ROOT / root).rglob("*.py"))


def packages() -> list[Path]:
    return sorted({p.parent for p in python_files() if p.name == "__init__.py"})


def test_no_module_is_over_450_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in python_files() if (n := len(p.read_text(encoding="utf-8").splitlines())) > LIMIT}
    assert not long, f"modules over {LIMIT} lines (split them by concept): {long}"


def test_only_the_public_face_stays_at_the_top() -> None:
    for root, allowed in TOP.items():
        top = {p.stem for p in (ROOT / root).glob("*.py")}
        assert top == allowed, f"{root}/ holds modules outside a package: {sorted(top - allowed)} (put each in the package of its concern)"


def test_no_package_is_too_big_to_take_in() -> None:
    big = {str(d.relative_to(ROOT)): n for d in packages() if (n := len([p for p in d.glob("*.py") if p.name != "__init__.py"])) > PACKAGE_LIMIT}
    assert not big, f"packages of more than {PACKAGE_LIMIT} modules (split by concern): {big}"


def test_every_package_says_what_it_is_for() -> None:
    silent = [str(d.relative_to(ROOT)) for d in packages() if not ast.get_docstring(ast.parse((d / "__init__.py").read_text(encoding="utf-8")))]
    assert not silent, f"packages whose __init__.py has no docstring saying what they hold: {silent}"


def _one_letter_apart(a: str, b: str) -> bool:
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) == 1
    short, long = sorted((a, b), key=len)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def test_no_two_module_names_differ_by_a_letter() -> None:
    assert _one_letter_apart("call", "calls") and _one_letter_apart("replay", "reply") and not _one_letter_apart("run", "run")
    names: dict[str, list[str]] = {}
    for p in python_files():
        if p.name != "__init__.py":
            names.setdefault(p.stem, []).append(str(p.relative_to(ROOT)))
    close = [(names[a], names[b]) for a, b in itertools.combinations(sorted(names), 2) if _one_letter_apart(a, b)]
    assert not close, f"module names a letter apart (name each for what it holds): {close}"


def test_one_calls_walk_through_the_gate_and_execution_is_short() -> None:
    """From ``Run._step`` to the tool's ``execute``: at most 8 modules and 5 climbs back up the layers;
    to the recorded step, no climb at all (every callback is handed in from above)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import call_walk
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    walk = call_walk.walk(ROOT)
    through = walk.figures(walk.to_execution)
    whole = walk.figures()
    assert walk.to_execution > 0 and whole["modules"] > through["modules"]  # the walk was followed past execution
    assert through["path"][0] == "cogcli.gate.pipeline" and "cogcli.loop.execute" in through["path"]
    assert through["modules"] <= 8 and through["climbs"] <= 5, through
    assert whole["climbs"] == 0, whole["climbed"]


def test_the_map_in_architecture_md_matches_the_tree() -> None:
    """Every package of cogcli and workspace_tools is on ARCHITECTURE.md's map, and every module it names exists."""
    import re

    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    table = text[text.index("## The map") : text.index("## Where a run starts")]
    missing = [str(d.relative_to(ROOT)) for d in packages() if d.parent.parent == ROOT and f"`{d.name}/`" not in table]
    assert not missing, f"packages missing from ARCHITECTURE.md's map: {missing}"
    known = [p.relative_to(ROOT).as_posix() for p in [*python_files(), *ROOT.glob("tests/*.py"), *ROOT.glob("benchmarks/*.py")]]
    named = set(re.findall(r"`([\w./]+\.py)[` ]", text))
    stale = sorted(n for n in named if not any(k == n or k.endswith("/" + n) for k in known))
    assert not stale, f"ARCHITECTURE.md names modules that do not exist: {stale}"
