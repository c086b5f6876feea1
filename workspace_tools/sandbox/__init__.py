"""Where tests and commands run: bubblewrap, what it shows of the host (the project's Python found
as the person has it), the environment it passes, hints when it is to blame."""
