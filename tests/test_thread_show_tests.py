"""``cog thread show`` draws each run's last line from that run alone: a run that ran no tests says
nothing of tests, though the run before it in the thread did (issue 49: "14 tests passed" was put
on runs that ran none). Real cog processes, a replayed model, the calc project's real pytest run."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import REPLAY, json_lines, run_cog
from test_cli_edit import FIX, write_cassette


def test_each_run_of_a_shown_thread_says_only_its_own_tests(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    first = run_cog(["edit", "--json", "--model", REPLAY, FIX], repo)
    thread_id = json_lines(first.stdout)[-1]["threadId"]
    cassette = write_cassette(tmp_path / "more.jsonl", [{"text": "Nothing left to do."}])
    again = run_cog(["edit", "--json", "--thread", thread_id, "--model", f"replay:{cassette}", "Anything else?"], repo)
    assert again.returncode == 0, again.stderr

    shown = run_cog(["thread", "show", thread_id], repo)
    assert shown.returncode == 0, shown.stderr
    lasts = [line for line in shown.stdout.splitlines() if line.startswith(("Done · ", "Failed · "))]
    assert len(lasts) == 2
    assert "3 tests passed" in lasts[0]  # the first run fixed the code and ran the tests
    assert "test" not in lasts[1] and lasts[1].startswith("Done · 1 step")  # the second ran none
