"""load_skill: the instructions of one skill (:mod:`cogcli.project.skills`), when the model needs them.
It changes nothing: plan mode runs it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.contract.output import tool_output
from cogcli.project.skills import Skill, Skills
from cogcli.contract.tool import Tool, tool

#: the most bytes of a skill's other file returned
MAX_FILE_BYTES = 64 * 1024
#: the most of a skill folder's files named
MAX_LISTED = 50


class LoadSkillParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str = Field(min_length=1, max_length=64, description="The skill's name, as listed under Skills.")
    file: str | None = Field(default=None, max_length=300, description="Another file of the skill's folder to read (as load_skill listed it).")


def _personal_files(folder: Path) -> list[str]:
    out: list[str] = []
    for here, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            rel = (Path(here) / name).relative_to(folder).as_posix()
            if rel != "SKILL.md" and not name.startswith("."):
                out.append(rel)
            if len(out) >= MAX_LISTED:
                return out
    return out


def _read_personal(skill: Skill, file: str) -> str:
    folder = Path(skill.folder).resolve()
    target = (folder / file).resolve()
    if not target.is_relative_to(folder) or not target.is_file():
        raise ToolCallError(f"the skill {skill.name} has no file {file!r}; load_skill {skill.name} lists its files", code=ErrorCode.FILE_NOT_FOUND)
    with target.open("rb") as fh:
        data = fh.read(MAX_FILE_BYTES + 1)
    text = data[:MAX_FILE_BYTES].decode("utf-8", errors="replace")
    return text + (f"\n[cut at {MAX_FILE_BYTES // 1024} KiB]" if len(data) > MAX_FILE_BYTES else "")


def load_skill_tool(skills: Skills) -> Tool[LoadSkillParams]:
    def execute(params: LoadSkillParams) -> Any:
        skill = skills.get(params.name)
        if skill is None:
            known = ", ".join(skills.skills) or "none"
            raise ToolCallError(f"no skill named {params.name!r}; the skills are: {known}", code=ErrorCode.INVALID_ARGUMENTS)
        presentation = {"label": "Load skill", "icon": "book-open", "detail": skill.name + (f" · {params.file}" if params.file else "")}
        if params.file:
            if skill.source != "personal":
                raise ToolCallError(
                    f"the skill {skill.name} is the repository's: read its files with read_file {skill.folder}/{params.file}",
                    code=ErrorCode.INVALID_ARGUMENTS,
                )
            return tool_output(_read_personal(skill, params.file), details={"skill": skill.name, "file": params.file}, presentation=presentation)
        text = f"# Skill: {skill.name} ({skill.shown})\n\n{skill.body}\n"
        if skill.source == "personal":
            files = _personal_files(Path(skill.folder))
            if files:
                text += f"\n[its other files, read with load_skill name={skill.name} file=…: {', '.join(files)}]\n"
        else:
            text += f"\n[its folder is {skill.folder}/ in the repository: read any other file of it with read_file]\n"
        return tool_output(text, details={"skill": skill.name, "source": skill.source, "path": skill.shown}, presentation=presentation)

    return tool(
        name="load_skill",
        description="Load a skill's instructions (the skills are listed after the system prompt) when the task matches its description.",
        parameters=LoadSkillParams,
        execute=execute,
        presentation=lambda p: {"label": "Load skill", "icon": "book-open", "detail": p.name},
        kind="read",
        read_only=True,
        ordered_by=None,
    )
