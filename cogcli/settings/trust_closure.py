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
  packages, byte code and all — a change anywhere in it (a ``pip install`` too) asks again;
- every file a shell script it covers sources (``. lib.sh``, ``source "$(dirname "$0")/lib.sh"``,
  ``. "$CLAUDE_PROJECT_DIR/hooks/lib.sh"``), followed from script to script, each by its sha256, or
  as absent. A name built otherwise (another variable, a command's output) is not covered: a
  workspace hook runs from a copy of the covered files only (:mod:`cogcli.hooks.snapshot`), where
  such a file is not there.

``$CLAUDE_PROJECT_DIR`` and ``$COG_PROJECT_DIR`` in a command line or a sourced name are read as the
workspace root (:func:`project_relative`): a hook is started with them set to the folder it runs in.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterable

#: the most files one command's closure covers by content (the rest: the venv fingerprint, or left out)
MAX_FILES = 4000
#: a module bigger than this is covered by its hash but its imports are not followed
MAX_PARSED = 2 * 1024 * 1024
_SKIP_DIRS = frozenset({"__pycache__", ".git", ".cog", "node_modules"})
#: the project folder as a hook's command line or script names it
PROJECT_VARIABLES = ("${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR", "${COG_PROJECT_DIR}", "$COG_PROJECT_DIR")
#: how a shell script names its own folder
_OWN_FOLDER = ('"$(dirname "$0")"', '$(dirname "$0")', "$(dirname $0)", "${0%/*}", '"$(dirname "${BASH_SOURCE[0]}")"',
               '$(dirname "${BASH_SOURCE[0]}")', "$(dirname ${BASH_SOURCE[0]})", '$(dirname "$BASH_SOURCE")')
#: ``. name`` / ``source name`` where a command starts
_SOURCED = re.compile(r"""(?:^|[;&|({]|\bthen|\bdo|\belse)[ \t]*(?:\.|source)[ \t]+((?:"[^"\n]*"|'[^'\n]*'|[^\s;&|)"'])+)""", re.M)
_SHELLS = (b"sh", b"bash", b"dash", b"zsh", b"ksh")
#: the most shell scripts one command's sourced files are followed through
MAX_SCRIPTS = 200


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


def project_relative(text: str) -> str:
    """``text`` with the project folder's variables read as the workspace root (``.``)."""
    for name in PROJECT_VARIABLES:
        text = text.replace(name, ".")
    return text


def sourced_names(text: str, own_folder: str) -> list[str]:
    """The files a shell script ``text`` sources whose names are written out (relative to the
    working directory; the script's own folder is ``own_folder``); a name built otherwise is left out."""
    for idiom in _OWN_FOLDER:
        text = text.replace(idiom, own_folder)
    names = []
    for match in _SOURCED.finditer(project_relative(text)):
        word = match.group(1).replace('"', "").replace("'", "")
        if word and "$" not in word and "`" not in word and "*" not in word:
            names.append(os.path.normpath(word))
    return names


def is_shell_script(path: str) -> bool:
    """A ``.sh``/``.bash``/… file, or one whose ``#!`` line names a shell."""
    if path.endswith((".sh", ".bash", ".zsh", ".ksh")):
        return True
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return False
    words = first[2:].split() if first.startswith(b"#!") else []
    program = os.path.basename(words[0]) if words else b""
    if program == b"env" and len(words) > 1:
        program = words[1]
    return program in _SHELLS


def cover_sourced(root: str, found: dict[str, str], add: Callable[..., bool]) -> None:
    """Cover the files the shell scripts among ``found`` (path relative to ``root`` → fingerprint)
    source, and the files those source, by ``add(name, script=True)``."""
    done: set[str] = set()
    while len(done) < MAX_SCRIPTS:
        todo = [rel for rel, fp in found.items() if fp.startswith("sha256:") and rel not in done]
        if not todo:
            return
        for rel in todo:
            done.add(rel)
            path = os.path.join(root, rel)
            if not is_shell_script(path):
                continue
            try:
                if os.path.getsize(path) > MAX_PARSED:
                    continue
                with open(path, "rb") as f:
                    text = f.read().decode("utf-8", "surrogateescape")
            except OSError:
                continue
            for name in sourced_names(text, os.path.dirname(rel) or "."):
                add(name, script=True)
