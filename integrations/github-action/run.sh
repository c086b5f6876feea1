#!/usr/bin/env bash
# The action's run step: `cog edit` on the instruction, its events kept as JSON lines and drawn for
# the job at once (`cog render --format github`: log groups, ::error annotations, the job summary in
# $GITHUB_STEP_SUMMARY); then the patch of everything the run changed, and the step's outputs in
# $GITHUB_OUTPUT. It exits 0 when cog ran, whatever cog's exit code (the artifact upload comes
# next; finish.sh fails the job); it exits 2 when it could not start.
#
# Inputs come as environment variables (never spliced into the script: an instruction is data):
# COG_INSTRUCTION, COG_INPUT_MODEL, COG_INPUT_MAX_STEPS, COG_INPUT_MAX_TOKENS, COG_INPUT_MAX_COST,
# COG_INPUT_OUTPUT_SCHEMA, COG_INPUT_TEST_COMMAND.
set -uo pipefail

fail() { echo "::error title=cog::$1"; exit 2; }
[ -n "${COG_INSTRUCTION:-}" ] || fail "the instruction input is empty: say what to do"
: "${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set: run this as a GitHub Actions step}"
command -v cog >/dev/null || fail "cog is not on PATH (install: true, or install cogcli on the runner)"

out="${RUNNER_TEMP:-/tmp}/cog-run"
mkdir -p "$out"
events="$out/events.jsonl"
patch="$out/cog.patch"
instruction="$out/instruction.txt"
printf '%s' "$COG_INSTRUCTION" > "$instruction"
: > "$events"
: > "$patch"

args=(edit --json --approval auto --file "$instruction")
[ -n "${COG_INPUT_MODEL:-}" ] && args+=(--model "$COG_INPUT_MODEL")
[ -n "${COG_INPUT_MAX_STEPS:-}" ] && args+=(--max-steps "$COG_INPUT_MAX_STEPS")
[ -n "${COG_INPUT_MAX_TOKENS:-}" ] && args+=(--max-tokens "$COG_INPUT_MAX_TOKENS")
[ -n "${COG_INPUT_MAX_COST:-}" ] && args+=(--max-cost "$COG_INPUT_MAX_COST")
[ -n "${COG_INPUT_OUTPUT_SCHEMA:-}" ] && args+=(--output-schema "$COG_INPUT_OUTPUT_SCHEMA")
[ -n "${COG_INPUT_TEST_COMMAND:-}" ] && args+=(--test-command "$COG_INPUT_TEST_COMMAND")

# one run: its events to the file and, as they come, to the GitHub renderer
cog "${args[@]}" | tee "$events" | cog render --format github -
code=${PIPESTATUS[0]}

# the patch: every change in the work tree against HEAD, new files included, through an index of
# its own (the repository's index is left as it was; cog's .cog/ is excluded by git itself)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  index="$(mktemp)"
  rm -f "$index"
  if git rev-parse --verify -q HEAD >/dev/null; then
    GIT_INDEX_FILE="$index" git read-tree HEAD
  fi
  GIT_INDEX_FILE="$index" git add -A . >/dev/null 2>&1
  GIT_INDEX_FILE="$index" git diff --cached --binary > "$patch"
  rm -f "$index"
fi
changed=false
[ -s "$patch" ] && changed=true

# the outputs, read from the stream's finish line
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python3 "$here/../read_back.py" "$events" "$code" > "$out/run.json"
python3 - "$out/run.json" "$GITHUB_OUTPUT" "$patch" "$events" "$changed" <<'PY'
import json, secrets, sys

run_file, target, patch, events, changed = sys.argv[1:6]
with open(run_file, encoding="utf-8") as f:
    run = json.load(f)
values = {
    "exit-code": run["exit_code"], "status": run["status"] or "", "thread-id": run["thread_id"] or "",
    "tokens": "" if run["total_tokens"] is None else run["total_tokens"],
    "cost-usd": "" if run["cost_usd"] is None else run["cost_usd"],
    "changed": changed, "patch": patch, "events": events,
}
with open(target, "a", encoding="utf-8") as out:
    for key, value in values.items():
        out.write(f"{key}={value}\n")
    if run["output"] is not None:
        delimiter = f"cog_output_{secrets.token_hex(8)}"  # the model's text can never close it
        out.write(f"output<<{delimiter}\n{json.dumps(run['output'], ensure_ascii=False)}\n{delimiter}\n")
PY
echo "cog exited $code"
exit 0
