"""The workspace boundary: every path resolved inside it, what a listing shows, what is an
environment, what looks like a secret."""
