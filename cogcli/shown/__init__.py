"""Text shown to a person: every control character escaped, and what a person approves drawn byte
for byte."""
