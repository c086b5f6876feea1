"""``cog batch``: many tasks across repositories, each run in its own checkout exactly as
``cog edit`` runs it, on this machine (processes) or on Ray.

- :mod:`cogcli.batch.tasks` — the task file (``TASKS.jsonl``), checked whole before anything runs;
- :mod:`cogcli.batch.checkout` — a task's own clone, and its change as a patch;
- :mod:`cogcli.batch.runner` — one task: checkout, setup, the session's run, its result;
- :mod:`cogcli.batch.output_folder` — the output folder (results, patches, events) and resuming;
- :mod:`cogcli.batch.local` — tasks in processes on this machine;
- :mod:`cogcli.batch.cluster` — tasks as Ray tasks (Ray imported there only);
- :mod:`cogcli.batch.driver` — the batch itself: what runs, where, progress;
- :mod:`cogcli.batch.report` — ``cog batch report``.
"""
