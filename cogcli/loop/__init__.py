"""One run of an agent: a turn streamed, its calls prepared, gated, run and concluded, the step
recorded; budgets and the output schema checked after each response."""
