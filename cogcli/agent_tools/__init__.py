"""Tools of the agent itself rather than of the workspace: ``update_plan`` (the steps the model
means to take, for clients that draw a plan) and ``load_skill`` (a skill's instructions, when the
model needs them). Both change nothing (``read_only``): plan mode runs them."""
