"""One function escapes what a person is shown (``cogcli.shown.visible.visible``), the Studio page draws
with the same characters, and an MCP approval covers the workspace files its command runs
(``cogcli.settings.trust.command_files``)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_helpers import REPLAY
from serve_helpers import Served

from cogcli.settings import trust
from cogcli.shown.visible import visible as renderers_visible
from cogcli.shown.visible import say, visible

STUDIO = Path(__file__).resolve().parents[1] / "cogcli" / "server" / "static" / "studio.js"


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_one_function_escapes_and_the_renderers_name_is_the_same_function(capsys: pytest.CaptureFixture[str]) -> None:
    assert renderers_visible is visible
    assert visible("a\r\x1b[2Kb\nc\td\u202e") == "a\\x0d\\x1b[2Kb\nc\td\\u202e"
    assert visible("a\nb", one_line=True) == "a\\x0ab"  # a command or a path shown inside a line of cog's own
    say("cannot read /repo/\x1b]52;c;aGk=\x07x")
    assert capsys.readouterr().err == "cog: cannot read /repo/\\x1b]52;c;aGk=\\x07x\n"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_studio_page_escapes_exactly_what_visible_escapes(tmp_path: Path) -> None:
    source = STUDIO.read_text()
    snippet = source[source.index("// visible:begin") : source.index("// visible:end")]
    script = tmp_path / "visible.js"
    script.write_text(
        snippet
        + "let all = '';\nfor (let c = 0; c < 0x10000; c++) if (c < 0xd800 || c > 0xdfff) all += String.fromCharCode(c);\n"
        + "process.stdout.write(JSON.stringify(visible(all)));\n"
    )
    drawn = json.loads(subprocess.run(["node", str(script)], capture_output=True, text=True, check=True, timeout=60).stdout)
    every = "".join(chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF)
    assert drawn == visible(every)
    # and the page draws every string through it: text nodes, attributes, text set later
    assert "document.createTextNode(visible(child))" in source and "setAttribute(key, value === true ? '' : visible(value))" in source
    assert source.count(".textContent = ") == 1 and "node.textContent = visible(text)" in source


def test_an_approval_covers_the_script_the_package_and_a_program_path(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "srv.py").write_text("print('server')\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "__main__.py").write_text("from pkg.sub import run\n")
    (root / "pkg" / "sub" / "run.py").write_text("run = 1\n")
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "__pycache__" / "x.pyc").write_bytes(b"\0")  # python's own cache: left out
    (root / "bin").mkdir()
    (root / "bin" / "server").write_bytes(b"\x7fELF")

    assert trust.command_files(root, "python3 srv.py --port 1") == {"srv.py": _sha(b"print('server')\n")}
    assert trust.command_files(root, "python3 -u -m pkg") == {
        "pkg/__init__.py": _sha(b""), "pkg/__main__.py": _sha(b"from pkg.sub import run\n"), "pkg/sub/run.py": _sha(b"run = 1\n"),
    }
    assert trust.command_files(root, "./bin/server --config=srv.py") == {"bin/server": _sha(b"\x7fELF"), "srv.py": _sha(b"print('server')\n")}
    assert trust.command_files(root, "sh -c 'cd . && python3 srv.py | tee log'") == {"srv.py": _sha(b"print('server')\n")}
    # what does not exist yet is covered as absent: a script, a module planted later would run instead
    assert trust.command_files(root, "node server.js") == {"server.js": "absent"}
    assert trust.command_files(root, "python3 -m mcp_server_git") == {"mcp_server_git.py": "absent", "mcp_server_git/": "absent"}
    # the person's own files (an absolute path outside, a program found on PATH outside) are not read
    outside = tmp_path / "mine.py"
    outside.write_text("x")
    assert trust.command_files(root, f"python3 {outside}") == {}


def test_a_link_out_of_the_workspace_is_not_read_but_its_target_is_approved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "ws"
    (root / ".venv" / "bin").mkdir(parents=True)
    theirs = tmp_path / "python-of-the-person"
    theirs.write_text("#!/bin/sh\n")
    theirs.chmod(0o755)
    os.symlink(theirs, root / ".venv" / "bin" / "python")
    os.mkfifo(root / "fifo.py")  # reading it would block: it is not read as a file
    files = trust.command_files(root, ".venv/bin/python fifo.py")
    assert files == {".venv/bin/python": f"outside:{theirs}", "fifo.py": "not a file"}

    # a workspace folder on PATH (an activated virtualenv): the program found there is covered, and a
    # name not there yet is covered as absent (planted later, it would run instead of the system's)
    monkeypatch.setenv("PATH", f"{root / '.venv' / 'bin'}:/usr/bin:/bin")
    assert trust.command_files(root, "python fifo.py")[".venv/bin/python"] == f"outside:{theirs}"
    assert trust.command_files(root, "sh -c true") == {".venv/bin/sh": "absent"}
    (root / ".venv" / "bin" / "sh").write_text("planted\n")
    assert trust.command_files(root, "sh -c true") == {".venv/bin/sh": "not executable"}
    (root / ".venv" / "bin" / "sh").chmod(0o755)  # now it is the sh that runs
    assert trust.command_files(root, "sh -c true") == {".venv/bin/sh": _sha(b"planted\n")}


def test_a_changed_file_names_itself_and_an_old_approval_does_not_cover_files(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "srv.py").write_text("one\n")
    store = trust.TrustStore()
    trust.approve(store, root, "mcp_servers", "python3 srv.py")
    assert trust.is_trusted(store, root, "mcp_servers", "python3 srv.py")
    (root / "srv.py").write_text("two\n")
    checked = trust.review(store, root, "mcp_servers", "python3 srv.py")
    assert not checked.approved and checked.changed == ("srv.py",)
    assert "srv.py changed since you approved it" in trust.refusal(root, "mcp_servers", checked)
    assert "changed since you approved it: srv.py" in trust.question(root, "mcp_servers", "python3 srv.py", checked)

    # an approval written before files were covered holds the command line only: asked again
    legacy = trust.TrustStore.model_validate({"commands": [{"workspace": str(root.resolve()), "setting": "mcp_servers", "command": "python3 srv.py"}]})
    assert trust.review(legacy, root, "mcp_servers", "python3 srv.py").changed == ("srv.py",)
    assert trust.is_trusted(legacy, root, "mcp_servers", "true") is False  # never approved at all


def test_cog_serve_escapes_the_workspace_command_in_its_error_message(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    command = "sh -c 'touch x' \u202e\x1b[2Kharmless"
    (repo / "pyproject.toml").write_text((repo / "pyproject.toml").read_text() + f"\n[tool.cog]\nmcp_servers = [{json.dumps(command)}]\n")
    with Served(repo, model=REPLAY, env={"XDG_CONFIG_HOME": str(tmp_path / "config")}) as srv:
        refused = srv.post("/api/runs", {"input": "Fix the failing test", "approval": "auto"})
    assert refused.status_code == 400
    message = refused.json()["error"]
    assert "\\u202e\\x1b[2Kharmless" in message and "\x1b" not in message and "\u202e" not in message


def test_the_studio_page_draws_a_bidi_override_from_the_model_as_an_escape(make_repo, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from browser_helpers import chromium, wait_for
    from serve_helpers import write_cassette

    repo = make_repo("calc")
    name = "notes\u202etxt.exe"  # drawn raw, the override shows it as notes"exe.txt"
    model = write_cassette(tmp_path / "bidi.jsonl", [
        {"text": f"Writing {name}.", "toolCalls": [{"id": "w1", "name": "write_file", "arguments": {"path": name, "content": "x"}}]},
        {"text": "Done \x1b[2J."},
    ])
    driver = chromium(tmp_path / "profile")
    try:
        with Served(repo, model=model) as srv:
            run = srv.start("Write the notes", approval="auto")
            driver.get(f"{srv.base}/runs/{run['runId']}?token={srv.token}")
            wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-block=finish]"))
            steps = "return document.getElementById('steps').textContent"
            # the text rows are drawn on the animation frame after their events: wait for the last one
            wait_for(driver, lambda d: "Done" in d.execute_script(steps), message="the model's last text was never drawn")
            text = driver.execute_script(steps)
            title = driver.find_element(By.CSS_SELECTOR, 'section.call[data-call-id="w1"] .detail').get_attribute("title")
            # the DOM itself keeps the character: a plain text node would hand it to the layout
            raw = driver.execute_script("const n = document.createElement('div'); n.textContent = arguments[0]; return n.textContent", name)
    finally:
        driver.quit()
    assert "\u202e" in raw
    assert "Writing notes\\u202etxt.exe." in text and "Done \\x1b[2J." in text
    assert "\u202e" not in text and "\x1b" not in text
    assert title == "notes\\u202etxt.exe"
