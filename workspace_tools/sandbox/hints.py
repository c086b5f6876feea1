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
    r"No address associated with hostname|getaddrinfo failed|Could not resolve host|nodename nor servname|"
    # npm and npx (EAI_AGAIN, ENOTFOUND; ENOTCACHED once told they are offline), cargo and pip told so
    r"\bEAI_AGAIN\b|\bENOTFOUND\b|\bENOTCACHED\b|cache mode is 'only-if-cached'|"
    r"you're using offline mode \(--offline\)|--offline was specified|No matching distribution found"
)


def needs_network(texts: Iterable[str]) -> bool:
    """Whether a step's output says it wanted the network (a name that did not resolve, a package
    tool that was told it is offline)."""
    return any(text and _NO_NETWORK.search(text) for text in texts)


_DENIED = re.compile(r"Permission denied: '(/[^']+)'")


def failure_hint(workspace: Path, texts: Iterable[str], *, network_given: bool = False) -> str:
    """One line saying that failures look like the sandbox (and what to do), or "" when none do.
    ``network_given``: the person gave the tests the network, so a name that did not resolve is not the sandbox's."""
    workspace = Path(workspace)
    read_only: list[str] = []
    network = 0
    for text in texts:
        if not text:
            continue
        for match in _READ_ONLY.finditer(text):
            read_only.append(match.group(1) or "")
        if not network_given and _NO_NETWORK.search(text):
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
        reasons.append("a step needed the network (a host name did not resolve, or a package tool was offline), which the sandbox "
                       "does not give (only loopback works inside; npm, "
                       "pip and cargo are told they are offline, so they fail at once)")
    fixes = (["give the tests the network with --test-network (COG_TEST_NETWORK=1; still sandboxed)"] if network else [])
    if read_only:
        fixes.append(f"let them write a path with --sandbox-writable PATH ({WRITABLE_ENV})")
    return (
        f"Sandbox: some failures may come from the sandbox, not the code: {'; '.join(reasons)}. "
        f"If the tests need that, {', or '.join(fixes)}; or rerun with --sandbox off."
    )
