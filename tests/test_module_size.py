"""One concept per module, and none too long to read (issue 37): every module of cog is at most
450 lines; split one rather than grow it past that."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 450


def test_no_module_is_over_450_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for package in ("cogcli", "workspace_tools")
        for path in (ROOT / package).rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > LIMIT
    }
    assert not long, f"modules over {LIMIT} lines (split them): {long}"
