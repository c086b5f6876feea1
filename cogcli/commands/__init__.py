"""What each ``cog`` command does, behind the thin typer layer in :mod:`cogcli.cli`.

Imported only when its command runs, so ``cog --help`` stays fast.
"""
