"""Tools of the agent itself rather than of the workspace: ``update_plan`` (the steps the model
means to take, for clients that draw a plan), ``load_skill`` (a skill's instructions, when the
model needs them) and ``task`` (``delegate_task.py``: work handed to a subagent, run by
:mod:`cogcli.loop.subagent`). All three change nothing themselves (``read_only``): plan mode runs
them, and a subagent's own calls pass the gate each."""
