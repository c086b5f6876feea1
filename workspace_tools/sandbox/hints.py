"""Telling people when a failed test run looks like the sandbox's doing (a read-only file system,
a host name that does not resolve), and what to do about it."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from workspace_tools.sandbox.view import WRITABLE_ENV, _is_within

_READ_ONLY = re.compile(r"Read-only file system(?:: '([^']+)')?")


_NO_NETWORK = re.compile(
    r"Name or service not known|Temporary failure in name resolution|gaierror|Network is unreachable|"
    r"No address associated with hostname|getaddrinfo failed|Could not resolve host|nodename nor servname"
)


_DENIED = re.compile(r"Permission denied: '(/[^']+)'")


def failure_hint(workspace: Path, texts: Iterable[str]) -> str:
    """One line saying that failures look like the sandbox (and what to do), or "" when none do."""
    workspace = Path(workspace)
    read_only: list[str] = []
    network = 0
    for text in texts:
        if not text:
            continue
        for match in _READ_ONLY.finditer(text):
            read_only.append(match.group(1) or "")
        if _NO_NETWORK.search(text):
            network += 1
        for match in _DENIED.finditer(text):
            path = Path(match.group(1))
            if not _is_within(path, workspace):
                read_only.append(str(path))
    if not (read_only or network):
        return ""
    reasons = []
    if read_only:
        shown = next((p for p in read_only if p), "")
        reasons.append("a write outside the workspace was refused" + (f" ({shown})" if shown else " (read-only file system)"))
    if network:
        reasons.append("a host name did not resolve or the network was unreachable (only loopback works inside)")
    return (
        f"Sandbox: some failures may come from the sandbox, not the code: {'; '.join(reasons)}. "
        f"If the tests need that, rerun with --sandbox off, or let them write a path with --sandbox-writable PATH "
        f"({WRITABLE_ENV})."
    )
