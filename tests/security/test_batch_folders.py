"""``cog batch --out DIR``: links planted in DIR, and a task file asking for the person's secrets.

Each attack is shown working without the defence (a plain write or removal through the planted
link, the old way of handing a task's ``env`` to the tests) and failing against ``cog batch``, as
root and as an unprivileged user.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from security.conftest import Runner, needs_bwrap

pytestmark = needs_bwrap


def tasks_file(runner: Runner, repo: Path, task: dict) -> Path:
    folder = runner.scratch("tasks")
    tape = folder / "tape.jsonl"
    tape.write_text(json.dumps({"type": "cassette", "schemaVersion": 1, "model": "test:batch"}) + "\n"
                    + json.dumps({"type": "turn", "text": "Done.", "usage": {"inputTokens": 1, "outputTokens": 1}, "toolCalls": []}) + "\n")
    path = folder / "tasks.jsonl"
    path.write_text(json.dumps({"id": "t1", "repo": str(repo), "instruction": "Nothing", "model": f"replay:{tape}", **task}) + "\n")
    runner.own(folder)
    return path


@pytest.mark.parametrize("folder", ["patches", "events"])
def test_a_link_at_dir_patches_or_events_writes_nothing_outside(runner: Runner, folder: str) -> None:
    repo = runner.make_repo({"a.py": "x = 1\n"})
    out, elsewhere = runner.scratch("out"), runner.scratch("elsewhere")
    (out / folder).symlink_to(elsewhere)
    runner.own(out)
    # without the defence: a plain write of DIR/<folder>/t1.* lands in the other folder
    naive = runner.run([runner.python, "-c", f"open('{out}/{folder}/t1.x', 'w').write('planted')"], out)
    assert naive.returncode == 0 and (elsewhere / "t1.x").exists()
    (elsewhere / "t1.x").unlink()
    done = runner.cog(["batch", str(tasks_file(runner, repo, {})), "--out", str(out), "--workers", "1"], out)
    assert done.returncode == 2, done.stderr
    assert f"{out / folder} is a link" in done.stderr and "nothing" not in done.stdout
    assert list(elsewhere.iterdir()) == []  # no patch, no events, nothing in the other folder


def test_a_link_at_dir_work_never_removes_a_folder_outside(runner: Runner) -> None:
    repo = runner.make_repo({"a.py": "x = 1\n"})
    out, elsewhere = runner.scratch("out"), runner.scratch("elsewhere")
    for victim in ("demo", "t1"):
        (elsewhere / victim).mkdir()
        (elsewhere / victim / "precious.txt").write_text("keep me\n")
    runner.own(elsewhere)
    (out / "work").symlink_to(elsewhere)
    runner.own(out)
    # without the defence: removing DIR/work/<id> before a fresh clone removes the folder outside
    naive = runner.run([runner.python, "-c", f"import shutil; shutil.rmtree('{out}/work/demo')"], out)
    assert naive.returncode == 0 and not (elsewhere / "demo").exists()
    done = runner.cog(["batch", str(tasks_file(runner, repo, {})), "--out", str(out), "--workers", "1"], out)
    assert done.returncode == 2 and f"{out / 'work'} is a link" in done.stderr, done.stderr
    assert (elsewhere / "t1" / "precious.txt").read_text() == "keep me\n"


def tasks_can_start(runner: Runner) -> None:
    """A task runs in a forkserver process: skip when this user's python cannot start one here
    (its interpreter reached through a folder the user may not enter, as on some CI images)."""
    probe = runner.run([runner.python, "-c", "import multiprocessing as m\nc = m.get_context('forkserver')\n"
                        "p = c.Process(target=int)\np.start(); p.join(); assert p.exitcode == 0"], runner.base)
    if probe.returncode != 0:
        pytest.skip(f"{runner.name}: a forkserver process cannot start for this user here ({probe.stderr.strip().splitlines()[-1:]})")


def test_a_link_at_a_task_s_own_checkout_is_removed_not_followed(runner: Runner) -> None:
    tasks_can_start(runner)
    repo = runner.make_repo({"a.py": "x = 1\n"})
    out, elsewhere = runner.scratch("out"), runner.scratch("elsewhere")
    (elsewhere / "precious.txt").write_text("keep me\n")
    (out / "work").mkdir()
    (out / "work" / "t1").symlink_to(elsewhere)
    runner.own(out)
    runner.own(elsewhere)
    done = runner.cog(["batch", str(tasks_file(runner, repo, {})), "--out", str(out), "--workers", "1"], out)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert (elsewhere / "precious.txt").read_text() == "keep me\n"
    assert (out / "work" / "t1").is_dir() and not (out / "work" / "t1").is_symlink()


def test_a_task_file_s_env_passes_only_what_the_person_allowed_and_never_a_credential(runner: Runner) -> None:
    tasks_can_start(runner)
    repo = runner.make_repo({"a.py": "x = 1\n"})
    out = runner.scratch("out")
    secrets = {"OPENAI_API_KEY": "sk-proj-batchsecret0000000000000000", "MY_SERVICE_TOKEN": "tok-batchsecret-1",
               "PLAIN_VAR": "not-allowed", "ALLOWED_VAR": "allowed-value"}
    wanted = list(secrets)
    # without the defence: the task's env names handed to the tests as the person's own --pass-env
    naive = runner.run([runner.python, "-c", "import json; from workspace_tools.sandbox.environment import child_environment; "
                        f"print(json.dumps(child_environment(pass_env={wanted!r})))"], out, env=secrets)
    assert json.loads(naive.stdout)["OPENAI_API_KEY"] == secrets["OPENAI_API_KEY"]
    task = {"env": wanted, "setup": "env > seen-env.txt"}
    done = runner.cog(["batch", str(tasks_file(runner, repo, task)), "--out", str(out), "--workers", "1",
                       "--pass-env", "ALLOWED_VAR", "--pass-env", "OPENAI_API_KEY"], out, env=secrets)
    assert done.returncode == 0, (done.stdout, done.stderr)
    seen = (out / "work" / "t1" / "seen-env.txt").read_text()
    assert "ALLOWED_VAR=allowed-value" in seen
    for name in ("OPENAI_API_KEY", "MY_SERVICE_TOKEN", "PLAIN_VAR"):
        assert name not in seen and secrets[name] not in seen
    result = json.loads((out / "results.jsonl").read_text().splitlines()[-1])
    notes = " ".join(result["notes"])
    assert "env OPENAI_API_KEY is named like a credential" in notes and "--pass-env PLAIN_VAR" in notes
