"""Text files as written (encoding, BOM, line endings) and diffs as git writes them, in bounded
time."""
