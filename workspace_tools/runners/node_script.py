"""A package's test script as ``package.json`` gives it: which runner it is exactly one
invocation of (``vitest``, ``jest``, ``mocha``, ``tape``, ``node --test``), or a script to run as written."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workspace_tools.runners.base import split_command


def read_package_json(root: Path) -> dict[str, Any]:
    try:
        data = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


#: ``npm init``'s placeholder: the package has no tests
_NO_TESTS = re.compile(r"""^\s*echo\s+["']?Error: no test specified["']?\s*&&\s*exit 1\s*$""")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
#: vitest's first word when it is not a file filter
_VITEST_MODES = ("run", "watch", "dev", "related", "bench", "typecheck", "list", "init")


@dataclass
class TestScript:
    """What the package's ``test`` script asks for.

    ``kind`` is ``vitest``, ``jest``, ``mocha``, ``tape`` or ``node`` when the script is exactly one invocation of that
    runner (maybe after ``NAME=value`` settings or ``cross-env``): cog drives it itself, with
    ``args`` (the runner's own words from the script) and ``env``. It is ``npm`` when the script
    must run as written (``why`` says why: it chains commands, npm runs its pre/post scripts, it
    wraps the runner in ``c8``/``nyc``, or it runs a program cog does not drive), and None when the
    package has no tests (no test script and no runner in its devDependencies, or npm's placeholder).
    ``inside`` lists the runners cog knows that the script runs somewhere.
    """

    kind: str | None
    text: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    why: str = ""
    inside: list[str] = field(default_factory=list)
    #: a script of the package sets node's test reporters itself (cog's would clash with them)
    own_reporter: bool = False


def test_script(root: Path) -> TestScript:
    """The package in ``root``'s test script, read (see :class:`TestScript`)."""
    data = read_package_json(root)
    scripts = data.get("scripts") if isinstance(data.get("scripts"), dict) else {}
    text = scripts.get("test")
    if not isinstance(text, str) or not text.strip():
        deps: dict[str, Any] = {}
        for key in ("devDependencies", "dependencies"):
            if isinstance(data.get(key), dict):
                deps.update(data[key])
        for name in ("vitest", "jest", "mocha", "tape"):
            if name in deps:  # no test script: the runner the package installs, as `npx NAME` would run
                return TestScript(name, inside=[name])
        return TestScript(None)
    if _NO_TESTS.match(text):
        return TestScript(None, text=text)
    script = _read_script(scripts, text)
    script.own_reporter = any(isinstance(v, str) and "--test-reporter" in v for v in scripts.values())
    return script


def _read_script(scripts: dict[str, Any], text: str) -> TestScript:
    inside = _runners_in(_script_words(scripts, "test", depth=3))
    hooks = [f"{p}test" for p in ("pre", "post") if isinstance(scripts.get(f"{p}test"), str)]
    if hooks:
        return TestScript("npm", text, why=f"npm runs its {' and '.join(hooks)} script{'s' if len(hooks) > 1 else ''} "
                          "with it", inside=inside)
    words = split_command(text)
    if words is None:
        chained = any(op in text for op in ("&&", "||", ";", "|"))
        why = "it chains commands" if chained else "it uses the shell (variables, redirections or subshells)"
        return TestScript("npm", text, why=why, inside=inside)
    env: dict[str, str] = {}
    while words and (_ASSIGNMENT.match(words[0]) or words[0] == "cross-env"):
        if words[0] != "cross-env":
            name, _, value = words[0].partition("=")
            env[name] = value
        words = words[1:]
    if words[:1] == ["npx"] and len(words) > 1 and not words[1].startswith("-"):
        words = words[1:]
    head = words[0].rsplit("/", 1)[-1] if words else ""
    rest = words[1:]
    if head == "vitest" and (not rest or rest[0].startswith("-") or rest[0] == "run" or rest[0] not in _VITEST_MODES):
        return TestScript("vitest", text, args=rest[1:] if rest[:1] == ["run"] else rest, env=env, inside=inside)
    if head in ("jest", "mocha", "tape"):
        return TestScript(head, text, args=rest, env=env, inside=inside)
    if head == "node" and "--test" in rest:
        return TestScript("node", text, args=rest, env=env, inside=inside)
    if head in ("npm", "pnpm", "yarn", "npm-run-all", "run-s", "run-p", "concurrently", "turbo", "lerna", "nx"):
        why = "it runs other scripts"
    elif head in ("c8", "nyc"):
        why = f"it runs the tests under {head} (coverage), whose own checks count"
    else:
        why = f"it runs {head or 'nothing'}, which cog does not drive"
    return TestScript("npm", text, why=why, inside=inside)


def _runners_in(words: list[str]) -> list[str]:
    """The runners cog knows among a script's words (``node`` only with ``--test``)."""
    found = []
    for i, word in enumerate(words):
        base = word.rsplit("/", 1)[-1]
        if base in ("vitest", "jest", "mocha", "tape") and base not in found:
            found.append(base)
        elif base == "node" and "node" not in found:
            for after in words[i + 1:]:
                if after in ("&&", "||", ";", "|") or after.endswith(";"):
                    break
                if after == "--test":
                    found.append("node")
                    break
    return found


def _script_words(scripts: dict[str, Any], name: str, depth: int) -> list[str]:
    """The words of script ``name``, with the scripts it runs (``npm run test:unit``) in place."""
    script = str(scripts.get(name) or "")
    words = split_command(script) or script.split()
    out: list[str] = []
    for i, word in enumerate(words):
        if depth > 0 and i > 0 and words[i - 1] in ("run", "run-script") and word in scripts and word != name:
            out += _script_words(scripts, word, depth - 1)
        else:
            out.append(word)
    return out
