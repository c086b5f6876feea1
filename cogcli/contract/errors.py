"""Error codes and the exception hierarchy. The model reads an error's message; the code is for code."""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    # a call that could not run or failed
    TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
    INVALID_ARGUMENTS = "INVALID_ARGUMENTS"
    TOOL_TIMEOUT = "TOOL_TIMEOUT"
    TOOL_ERROR = "TOOL_ERROR"
    ABORTED = "ABORTED"
    INVALID_OUTPUT = "INVALID_OUTPUT"
    RESULT_NOT_SERIALIZABLE = "RESULT_NOT_SERIALIZABLE"
    DENIED = "DENIED"
    #: the model reached its output limit while writing the call's arguments: nothing ran
    OUTPUT_CUT = "OUTPUT_CUT"
    #: plan mode: the call's tool does not declare ``read_only``, so it was refused unrun
    PLAN_MODE = "PLAN_MODE"
    # workspace tools
    PATH_OUTSIDE_WORKSPACE = "PATH_OUTSIDE_WORKSPACE"
    #: the path is in cog's own state (.cog/): no tool reads or writes it
    COG_STATE = "COG_STATE"
    FILE_NOT_FOUND = "FILE_NOT_FOUND"
    FILE_NOT_TEXT = "FILE_NOT_TEXT"
    FILE_TOO_LARGE = "FILE_TOO_LARGE"
    EDIT_NO_MATCH = "EDIT_NO_MATCH"
    EDIT_AMBIGUOUS = "EDIT_AMBIGUOUS"
    FILE_CHANGED = "FILE_CHANGED"
    SECRET_FILE = "SECRET_FILE"
    GIT_ERROR = "GIT_ERROR"
    # the run
    MODEL_STREAM_ERROR = "MODEL_STREAM_ERROR"
    MODEL_CONFIG_ERROR = "MODEL_CONFIG_ERROR"
    #: the request was longer than the model's context window (the run compacts and retries once)
    CONTEXT_LENGTH_EXCEEDED = "CONTEXT_LENGTH_EXCEEDED"
    CASSETTE_EXHAUSTED = "CASSETTE_EXHAUSTED"
    MCP_ERROR = "MCP_ERROR"
    #: the run went past --max-tokens or --max-cost (status budget_exceeded)
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
    #: the final answer never matched --output-schema in its tries
    OUTPUT_SCHEMA_INVALID = "OUTPUT_SCHEMA_INVALID"


class CogError(Exception):
    """Base of every cog error; ``code`` says why."""

    code: str = ErrorCode.TOOL_ERROR

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class ToolCallError(CogError):
    """Raised by a tool for an expected failure: the model reads ``message``, no traceback is logged.

    >>> raise ToolCallError("old_text not found in a.py", code="EDIT_NO_MATCH")
    """


class ConfigError(CogError):
    """Bad usage or configuration (unknown provider, missing API key): the CLI exits 2."""

    code = ErrorCode.MODEL_CONFIG_ERROR


class ModelError(CogError):
    """The model server failed or cut its stream: the run ends with status ``error``."""

    code = ErrorCode.MODEL_STREAM_ERROR


class ContextLengthError(ModelError):
    """The provider refused a request as longer than the model's context window. ``limit`` (the
    window) and ``tokens`` (the request's size) are set when the provider's message says them."""

    code = ErrorCode.CONTEXT_LENGTH_EXCEEDED

    def __init__(self, message: str, *, limit: int | None = None, tokens: int | None = None) -> None:
        super().__init__(message)
        self.limit = limit
        self.tokens = tokens


def where_it_broke(exc: BaseException) -> str:
    """`` (at cogcli/loop/run.py:123; cog -v shows the traceback)``: the deepest frame of ``exc``, said
    with a failure nobody foresaw (a bug to report), so it is not only in the debug log."""
    import traceback
    from pathlib import Path

    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    parts = Path(frames[-1].filename).parts
    shown = "/".join(parts[len(parts) - 1 - parts[::-1].index("cogcli"):]) if "cogcli" in parts else parts[-1]
    return f" (at {shown}:{frames[-1].lineno}; cog -v shows the traceback)"
