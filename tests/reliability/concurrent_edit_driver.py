"""One of two processes editing one file at once (tests/reliability/test_rel_concurrent_edits.py).

    python concurrent_edit_driver.py WORKSPACE FILE PREFIX ROUNDS GO_FILE [--no-defence]

Waits until GO_FILE exists (so both processes start together), then makes ROUNDS ``edit_file``
calls through the real tool: line ``{PREFIX}{i} = 0`` becomes ``{PREFIX}{i} = 1``. Prints JSON:
the rounds reported as applied and the error codes of the others. ``--no-defence`` takes the
cross-process lock and the compare-before-rename away (what cog did before issue 13).
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path

import anyio


def main() -> None:
    workspace, file, prefix, rounds, go = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), Path(sys.argv[5])
    if "--no-defence" in sys.argv:
        import workspace_tools.text.textfile as textfile

        textfile.workspace_lock = lambda root: contextlib.nullcontext()  # type: ignore[assignment]
        real = textfile.atomic_write

        def unchecked(path, data, *, mode=None, root=None, expect=None):  # type: ignore[no-untyped-def]
            return real(path, data, mode=mode, root=root)

        import workspace_tools.files.edit as edit

        edit.atomic_write = unchecked  # type: ignore[assignment]

    from cogcli.contract.invoke import invoke_tool
    from workspace_tools import workspace_tools

    tool = next(t for t in workspace_tools(workspace, include_git=False) if t.name == "edit_file")
    while not go.exists():
        time.sleep(0.001)
    applied, failed = [], {}
    for i in range(rounds):
        result = anyio.run(invoke_tool, tool, {"path": file, "old_text": f"{prefix}{i} = 0\n", "new_text": f"{prefix}{i} = 1\n"})
        if result.ok:
            applied.append(i)
        else:
            failed[i] = result.error_code
    print(json.dumps({"applied": applied, "failed": failed}))


if __name__ == "__main__":
    main()
