"""What the snapshot before each command costs (issue 52), on a generated 10,000-file git repository.

    python benchmarks/undo_snapshot.py [--files 10000] [--rounds 15] [--changed 3]

In the same run, alternating each round:

- baseline: the before/after scan run_command makes of every command anyway
  (:func:`workspace_tools.shell.tree_changes.scan`), without a snapshot;
- snapshot: the same scan, then :meth:`SnapshotStore.take` (the stat index compared, the changed
  files read, hashed and copied), after ``--changed`` files were rewritten since the last one;
- record: writing the journal records of those changes after the command (:meth:`CommandUndo.after`).

Also the first snapshot of the repository (every file copied once: paid once per workspace) and the
store's disk use. Target: snapshot + record under 0.1 s a command when few files change.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@b.invalid", "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@b.invalid"}


def make_repo(root: Path, files: int) -> Path:
    repo = root / "repo"
    per = 100
    for n in range(files):
        folder = repo / "src" / f"pkg{n // per}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{n % per}.py").write_text("".join(f"def f{i}(x):\n    return x + {i + n}\n\n" for i in range(20)))
    (repo / ".gitignore").write_text("build/\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "first"], check=True, env={**os.environ, **GIT_ENV})
    return repo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--changed", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cog-bench-undo-") as tmp:
        os.environ["XDG_STATE_HOME"] = str(Path(tmp) / "state")
        from workspace_tools.files.journal import Journal
        from workspace_tools.shell.command_undo import CommandUndo
        from workspace_tools.shell.snapshot_store import disk_use
        from workspace_tools.shell.tree_changes import compare, scan

        repo = make_repo(Path(tmp), args.files)
        journal = Journal(repo)
        journal.begin("thr_bench", "msg_bench")
        undo = CommandUndo(repo, journal)
        started = time.perf_counter()
        first = undo.before(scan(repo))
        cold = time.perf_counter() - started
        assert not isinstance(first, str), first
        print(f"repository: {args.files} files; first snapshot (every file copied once): {cold:.2f} s, {first.copied} copied")

        base_s, snap_s, take_s, record_s = [], [], [], []
        targets = sorted(scan(repo).files)[: args.changed]
        for r in range(args.rounds):
            for rel in targets:  # what the last command changed
                with open(repo / rel, "a") as f:
                    f.write(f"# round {r}\n")
            t0 = time.perf_counter()
            scan(repo)
            base_s.append(time.perf_counter() - t0)

            t0 = time.perf_counter()
            before = scan(repo)
            taken = undo.before(before)
            snap_s.append(time.perf_counter() - t0)
            assert not isinstance(taken, str)
            take_s.append(taken.seconds)
            for rel in targets:  # the command
                (repo / rel).write_text(f"# generated in round {r}\n")
            after = scan(repo)
            changes = compare(before, after, repo)
            t0 = time.perf_counter()
            recorded = undo.after(taken, changes, before, after, "command: bench")
            record_s.append(time.perf_counter() - t0)
            assert recorded.count == len(targets), recorded
        med = statistics.median
        print(f"per command, median of {args.rounds} rounds, {args.changed} files changed:")
        print(f"  baseline scan alone:        {med(base_s) * 1000:7.1f} ms")
        print(f"  scan + snapshot:            {med(snap_s) * 1000:7.1f} ms  (the snapshot itself {med(take_s) * 1000:.1f} ms)")
        print(f"  records after the command:  {med(record_s) * 1000:7.1f} ms")
        extra = med(take_s) + med(record_s)
        print(f"  added by undo per command:  {extra * 1000:7.1f} ms  ({'under' if extra < 0.1 else 'OVER'} the 100 ms target)")
        print(f"store on disk: {disk_use(repo) / (1024 * 1024):.1f} MB")
        journal.close()


if __name__ == "__main__":
    main()
