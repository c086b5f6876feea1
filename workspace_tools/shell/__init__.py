"""run_command: a shell in the test sandbox, its output bounded and streamed, the files it changed."""
