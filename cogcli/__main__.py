"""``python -m cogcli`` runs the ``cog`` command line."""

from cogcli.cli import main

if __name__ == "__main__":
    main()
