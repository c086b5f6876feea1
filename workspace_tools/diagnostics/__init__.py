"""Diagnostics: the project's own checkers (ruff, mypy/pyright, tsc/ESLint, go vet/gopls, cargo check)
run in the test sandbox after every file change a tool makes, and on request (the ``diagnostics``
tool); what a change introduced is told apart from the project's backlog (docs/diagnostics.md).

``sources.py`` declares the checkers, ``parsers.py`` reads their output, ``sandboxed.py`` runs one
under a time budget, ``servers.py`` keeps tsserver warm to answer for tsc after changes
(``tsserver.py`` its protocol), ``compare.py`` matches problems before and after a change (lines
moved by the diff), ``checker.py`` keeps a session's verdicts, ``after_change.py`` wraps the file
tools, and ``tool.py`` is the ``diagnostics`` tool.
"""
