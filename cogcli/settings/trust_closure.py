"""What an approved Python command loads beyond the files it names (:mod:`cogcli.settings.trust`): its
import closure in the workspace and the workspace virtualenv it runs from.

A sandboxed test may write anywhere in the workspace. If it could rewrite a module an approved
MCP server imports from its own folder, plant ``json.py`` beside its script (the script's folder
is first on ``sys.path``: it shadows the standard library), or drop a ``.pth`` file into the
virtualenv the server runs from, the next ``cog`` would run that code on the host under the old
approval. So the approval also covers:

- every module the script (or ``python -m`` package) imports, followed from import to import
  through the workspace (``ast``, never run), each by its sha256; a name imported that is not in
  the workspace is covered as absent there (``json.py``, ``json/``), so one planted later shadows
  nothing unasked;
- a workspace virtualenv the program lives in (``.venv/bin/python``): every file and folder under
  it by path, size, inode and change time (``ctime``, which no one can set back), ``.pth`` files,
  packages, byte code and all — a change anywhere in it (a ``pip install`` too) asks again.
"""

from __future__ import annotations

import ast
import hashlib
import os
import stat
from collections.abc import Callable, Iterable

#: the most files one command's closure covers by content (the rest: the venv fingerprint, or left out)
MAX_FILES = 4000
#: a module bigger than this is covered by its hash but its imports are not followed
MAX_PARSED = 2 * 1024 * 1024
_SKIP_DIRS = frozenset({"__pycache__", ".git", ".cog", "node_modules"})


def imported_names(source: bytes) -> set[str]:
    """The top-level names of the absolute imports in ``source`` (``import a.b`` → ``a``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def cover_imports(root: str, folder: str, sources: Iterable[str], add: Callable[..., bool], absent: Callable[[str], None]) -> None:
    """Follow the imports of the Python files ``sources`` (real paths) from ``folder`` (the first
    entry of ``sys.path``, a real path in the workspace ``root``): ``add(path)`` covers a file,
    ``absent(rel)`` a name that must stay absent."""
    queue = list(sources)
    seen: set[str] = set(queue)
    done_names: set[str] = set()
    while queue and len(seen) <= MAX_FILES:
        path = queue.pop()
        try:
            if os.path.getsize(path) > MAX_PARSED:
                continue
            with open(path, "rb") as f:
                source = f.read()
        except OSError:
            continue
        for name in sorted(imported_names(source) - done_names):
            done_names.add(name)
            if not name.isidentifier():
                continue
            module, package = os.path.join(folder, name + ".py"), os.path.join(folder, name)
            found = [module] if os.path.isfile(module) else _package_files(package) if os.path.isdir(package) else None
            if found is None:
                rel = os.path.relpath(folder, root)
                prefix = "" if rel == "." else rel + "/"
                absent(prefix + name + ".py")
                absent(prefix + name + "/")
                continue
            for file in found:
                add(file)
                if file.endswith(".py") and file not in seen:
                    seen.add(file)
                    queue.append(file)


def cover_module(root: str, name: str, add: Callable[..., bool], absent: Callable[[str], None]) -> None:
    """``python -m name`` run from ``root``: follow the imports of its package's (or module's) files."""
    top = os.path.join(root, name.split(".")[0])
    if os.path.isfile(top + ".py"):
        sources = [top + ".py"]
    elif os.path.isdir(top) and not os.path.islink(top):
        sources = [f for f in _package_files(top) if f.endswith(".py")]
    else:
        return
    cover_imports(root, root, sources, add, absent)


def _package_files(folder: str) -> list[str]:
    out: list[str] = []
    for here, dirs, files in os.walk(folder):  # does not descend into links
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        out += [os.path.join(here, f) for f in sorted(files)]
        if len(out) > MAX_FILES:
            break
    return out


def venv_of(root: str, program: str) -> str | None:
    """The workspace virtualenv (real path) the program ``program`` (as written) lives in, or None."""
    if "/" not in program:
        return None
    lexical = os.path.normpath(os.path.join(root, program))
    folder = os.path.dirname(os.path.dirname(lexical))  # <venv>/bin/python
    if not (folder == root or folder.startswith(root.rstrip("/") + "/")) or folder == root:
        return None
    if not os.path.isfile(os.path.join(folder, "pyvenv.cfg")) or os.path.islink(folder):
        return None
    return folder


def tree_fingerprint(folder: str) -> str:
    """``tree:<sha256>`` of every entry under ``folder`` (no link followed): path, type, size,
    inode and change time, so nothing in it is changed, added or removed unnoticed."""
    digest = hashlib.sha256()
    count = 0
    for here, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files) + dirs:
            path = os.path.join(here, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            rel = os.path.relpath(path, folder)
            digest.update(f"{rel}\0{stat.S_IFMT(st.st_mode)}\0{st.st_mode & 0o7777}\0{st.st_size}\0{st.st_ino}\0{st.st_ctime_ns}\n".encode("utf-8", "surrogateescape"))
            count += 1
    return f"tree:{count}:{digest.hexdigest()}"
