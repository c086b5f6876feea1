"""Credentials kept out of everything cog hands out: the redactor, the token formats and key blocks
it knows, the environment's secrets, and the model's streamed text."""
