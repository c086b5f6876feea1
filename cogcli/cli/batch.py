"""``cog batch`` and ``cog batch report``: their options and help; the bodies are in
:mod:`cogcli.batch`. Only typer and the standard library at the top (``cog --help`` imports this)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from cogcli.cli.ray_option import ray_address
from cogcli.cli.setting_flags import with_settings
from cogcli.settings.options import BATCH, SettingFlags

BATCH_HELP = """\
Run many tasks, each in its own checkout, on this machine or on Ray.

\b
  cog batch TASKS.jsonl --out DIR [--workers N]      tasks in processes here
  cog batch TASKS.jsonl --out DIR --ray [ADDRESS]    tasks on Ray (a local one, or a cluster)
  cog batch report DIR [--json]                      what the results say (also while it runs)

\b
TASKS.jsonl holds one task a line:
  {"id": "t1", "repo": "path/or/git-url", "instruction": "Fix the failing test"}
  optional: "ref" (commit, branch or tag), "model", "test_command",
  "setup" (a command run in the checkout before the agent, in the test sandbox, without
  network unless --setup-network), "env" (names of variables passed to the setup and the
  tests: only those the person allows with --pass-env, never credential-named ones).

Batch runs are non-interactive: the agent's writes and test runs are allowed, inside each
task's own checkout (DIR/work/ID; the source repository is never touched); a workspace's own
MCP servers start only if approved beforehand with `cog trust`."""

RUN_HELP = BATCH_HELP + """

\b
Writes, as each task ends: DIR/results.jsonl (one line a task: status passed, failed, error or
aborted, exit code, steps, tokens, cost, duration, files changed, test counts, error),
DIR/patches/ID.diff (git apply it at the result's base commit), DIR/events/ID.jsonl (its events:
cog render draws them). Running the same command again resumes: tasks with a result are skipped
(aborted ones run again); --rerun failed also runs the failed and erred ones. Ctrl-C stops the
running tasks (status aborted) and leaves the rest for the resume.

\b
Exit codes: 0 every task passed, 1 some did not, 2 a bad task file or option (nothing ran),
130 stopped by Ctrl-C."""


class _BatchGroup(TyperGroup):
    """``cog batch TASKS.jsonl …`` runs a batch, ``cog batch report DIR`` reports on one: a first
    argument that is not a subcommand (nor help) is the task file of ``run``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, ray_address(args))


batch_app = typer.Typer(cls=_BatchGroup, help=BATCH_HELP, rich_markup_mode=None, no_args_is_help=True,
                        context_settings={"help_option_names": ["-h", "--help"]})


@batch_app.command("run", help=RUN_HELP)
@with_settings(BATCH)
def run(
    tasks: Annotated[Path, typer.Argument(metavar="TASKS.jsonl", help="The tasks, one JSON object a line.", show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", metavar="DIR", help="Where the results, patches, events and checkouts go (made if missing).", show_default=False)],
    workers: Annotated[Optional[int], typer.Option("--workers", "-w", min=1, max=1024, metavar="N", help="Tasks at once (default: half the cores, at least 1).", show_default=False)] = None,
    ray: Annotated[Optional[str], typer.Option("--ray", metavar="[ADDRESS]", help="Run the tasks on Ray: alone, a local Ray started for the batch; with ADDRESS (auto, ray://head:10001), that cluster.", show_default=False)] = None,
    cpus_per_task: Annotated[float, typer.Option("--cpus-per-task", min=0.01, max=1024, metavar="N", help="With --ray: the CPUs each task asks for.")] = 1.0,
    pass_env: Annotated[Optional[list[str]], typer.Option("--pass-env", metavar="NAME", help="A variable tasks may pass to their setup and tests when their \"env\" names it (repeatable; never one named like a credential).", show_default=False)] = None,
    setup_network: Annotated[bool, typer.Option("--setup-network", help="Let each task's setup command reach the network (to install dependencies); it stays in the sandbox otherwise, and the tests never get the network.")] = False,
    rerun: Annotated[Optional[str], typer.Option("--rerun", metavar="failed", help="failed: run the tasks that failed or erred again too.", show_default=False)] = None,
    output_schema: Annotated[Optional[Path], typer.Option("--output-schema", metavar="FILE", help="Each task's final answer must be JSON valid against this JSON Schema; it is the result's output.", show_default=False)] = None,
    *,
    flags: SettingFlags,
) -> None:
    from cogcli.cli.typer_app import fail

    if rerun not in (None, "failed"):
        fail(f"--rerun takes 'failed' (run the failed and erred tasks again), got {rerun!r}")
    from cogcli.batch.local import default_workers
    from cogcli.batch.driver import BatchRequest, run_batch
    from cogcli.batch.runner import BatchOptions
    from cogcli.contract.errors import ConfigError

    tasks_file = tasks.expanduser().resolve()
    schema = None
    if output_schema is not None:  # read once here: every task (and a Ray node) gets the schema itself
        from cogcli.loop.output_schema import OutputSchema

        try:
            schema = OutputSchema.load(output_schema.expanduser()).schema
        except ConfigError as exc:
            fail(exc.message)
    request = BatchRequest(
        tasks_file=tasks_file,
        out=out.expanduser().resolve(),
        options=BatchOptions(flags=flags, base=tasks_file.parent, pass_env=tuple(pass_env or ()), setup_network=setup_network,
                             output_schema=schema),
        workers=workers or default_workers(),
        ray=ray is not None,
        ray_address=None if ray in (None, "local") else ray,
        cpus_per_task=cpus_per_task,
        rerun_failed=rerun == "failed",
    )
    import signal

    def terminated(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminated)  # SIGTERM stops the batch as Ctrl-C does
    try:
        code = run_batch(request)
    except ConfigError as exc:
        fail(exc.message)
    raise typer.Exit(code)


@batch_app.command("report")
def report(
    out: Annotated[Path, typer.Argument(metavar="DIR", help="A batch's output folder (its --out).", show_default=False)],
    json_flag: Annotated[bool, typer.Option("--json", help="The report as one JSON object.")] = False,
    swebench: Annotated[bool, typer.Option("--swebench", help="SWE-bench predictions instead: one JSON line a task (instance_id = the task id, model_name_or_path, model_patch).")] = False,
    model_name: Annotated[Optional[str], typer.Option("--model-name", metavar="NAME", help="With --swebench: the model_name_or_path (default cog/<the task's model>).", show_default=False)] = None,
) -> None:
    """The summary of a batch's results: tasks per status, tests, tokens and cost, the slowest
    tasks, the ones that did not pass. Reads DIR/results.jsonl, so it works while the batch runs."""
    from cogcli.cli.typer_app import fail

    if not (out / "results.jsonl").is_file():
        fail(f"{out} holds no results.jsonl: name the --out folder of a batch")
    import json

    if swebench:
        from cogcli.batch.swebench import predictions_jsonl

        try:
            typer.echo(predictions_jsonl(out, model_name=model_name), nl=False)
        except (OSError, ValueError) as exc:
            fail(f"cannot read the batch's patches: {exc}", 1)
        return
    from cogcli.batch.report import report as make_report, table

    data = make_report(out)
    if json_flag:
        typer.echo(json.dumps(data, ensure_ascii=False))
    else:
        typer.echo(table(data, out))
