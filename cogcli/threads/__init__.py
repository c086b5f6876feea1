"""Threads: what memory keeps of each run, how a run ended, what a model reads back, and walking
runs back (undo, rewind, export); sessions of other agents brought over (import)."""
