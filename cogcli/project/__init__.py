"""The project's own files that shape the agent: AGENTS.md instructions, custom commands, skills,
slash commands and the system prompt."""
