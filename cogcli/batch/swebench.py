"""``cog batch report DIR --swebench``: a batch's results as SWE-bench predictions, one JSON object
a line — ``{"instance_id", "model_name_or_path", "model_patch"}`` — what the SWE-bench harness
(``--predictions_path``) and Harbor's SWE-bench adapter read.

The instance id is the task's id (name the tasks after the SWE-bench instances); the patch is the
task's ``patches/ID.diff`` (empty when the run changed nothing: the harness counts it unresolved);
the model name is ``--model-name``, else ``cog/<the task's model>``. Every task with a result is
written, in id order; an aborted task (its run was stopped) is left out, as it never finished.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cogcli.batch.output_folder import Layout, read_results

#: the largest patch read back (a patch is a model's edits to one repository)
MAX_PATCH_BYTES = 50 * 1024 * 1024


def predictions(out: Path, *, model_name: str | None = None) -> Iterator[dict[str, Any]]:
    """The SWE-bench prediction of each finished task in the batch folder ``out``."""
    layout = Layout(out)
    for task_id, result in sorted(read_results(layout.results).items()):
        if result.status == "aborted":
            continue
        yield {
            "instance_id": task_id,
            "model_name_or_path": model_name or f"cog/{result.model or 'unknown'}",
            "model_patch": _patch(layout.patch(task_id)),
        }


def predictions_jsonl(out: Path, *, model_name: str | None = None) -> str:
    return "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in predictions(out, model_name=model_name))


def _patch(path: Path) -> str:
    """The patch text ("" when the task left none); never through a link (the folder is cog's)."""
    import os

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except (FileNotFoundError, NotADirectoryError):
        return ""
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_PATCH_BYTES + 1)
    if len(data) > MAX_PATCH_BYTES:
        raise ValueError(f"{path} is larger than {MAX_PATCH_BYTES // (1024 * 1024)} MiB")
    return data.decode("utf-8", errors="replace")
