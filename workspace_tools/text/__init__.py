"""Text files as written (encoding, BOM, line endings), diffs as git writes them, in bounded
time, and Codex's patch format (parsed, and its hunks placed in a text)."""
