"""How ``cog edit`` takes its instruction: an argument, ``-`` for stdin, or ``--file PATH``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import BinaryIO

from cogcli.contract.errors import ConfigError

#: an instruction file larger than this is surely a mistake (a log, a binary)
MAX_INSTRUCTION_BYTES = 1024 * 1024

HOW = 'say what to do: cog edit "Fix the failing test", cog edit - (read it from stdin) or cog edit --file task.md'


def read_instruction(
    argument: str | None, file: Path | None, *, stdin: BinaryIO | None = None, approval: str | None = None
) -> str:
    """The instruction from ``argument`` (``-``: all of stdin) or the file ``file``; raises
    :class:`ConfigError` naming the problem (none given, both given, unreadable, not UTF-8, empty)."""
    if argument is not None and file is not None:
        raise ConfigError(f"give the instruction once: as an argument or with --file, not both ({HOW})")
    if argument is None and file is None:
        raise ConfigError(f"no instruction given; {HOW}")
    if file is not None:
        where = f"--file {file}"
        try:
            if file.is_dir():
                raise ConfigError(f"{where}: is a directory; give the file that holds the instruction")
            data = file.read_bytes()[: MAX_INSTRUCTION_BYTES + 1]
        except FileNotFoundError:
            raise ConfigError(f"{where}: no such file") from None
        except OSError as exc:
            raise ConfigError(f"{where}: cannot be read ({exc.strerror or exc})") from None
    elif argument == "-":
        where = "stdin"
        if approval == "stdin":
            raise ConfigError("stdin cannot carry both the instruction (cog edit -) and approvals (--approval stdin); pass the instruction with --file PATH")
        stream = stdin if stdin is not None else sys.stdin.buffer
        data = stream.read(MAX_INSTRUCTION_BYTES + 1)
    else:
        return argument or ""
    if len(data) > MAX_INSTRUCTION_BYTES:
        raise ConfigError(f"the instruction from {where} is over {MAX_INSTRUCTION_BYTES // 1024} KiB; give a shorter one")
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"the instruction from {where} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    if not text.strip():
        raise ConfigError(f"the instruction from {where} is empty; {HOW}")
    return text.strip("\n")
