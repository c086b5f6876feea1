"""The file tools (read, list, search, edit, apply_patch, write, move, delete) and what they share: edit
feedback, linear-time patterns, the undo journal."""
