#!/usr/bin/env bash
# One task, non-interactively, as a benchmark harness runs an installed agent:
#
#   cog-harbor-run [--model PROVIDER/MODEL] [--logs DIR] [--max-steps N] [--max-tokens N] [--max-cost USD] -- INSTRUCTION
#
# Runs `cog edit` in the current directory (the task's repository or working folder) with every
# call approved, keys from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, …), and leaves in
# DIR (default /logs/agent): cog.jsonl (the events), cog.stderr, trajectory.json (ATIF) and
# usage.json (tokens, cache, cost, status and exit code: what the harness reads back). A Harbor
# model name provider/model becomes cog's provider:model. Exits with cog's exit code.
set -uo pipefail

logs="${COG_LOGS_DIR:-/logs/agent}"
model="${COG_MODEL:-}"
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model="$2"; shift 2 ;;
    --logs) logs="$2"; shift 2 ;;
    --max-steps|--max-tokens|--max-cost|--output-schema|--test-command) extra+=("$1" "$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "cog-harbor-run: unknown option $1 (the instruction goes after --)" >&2; exit 2 ;;
  esac
done
[ $# -eq 1 ] || { echo "cog-harbor-run: give the instruction as one argument after --" >&2; exit 2; }
case "$model" in
  */*) [ "${model%%:*}" = "$model" ] && model="${model%%/*}:${model#*/}" ;;  # openai/gpt-4o → openai:gpt-4o
esac

mkdir -p "$logs"
printf '%s' "$1" > "$logs/instruction.txt"
args=(edit --json --approval auto --file "$logs/instruction.txt" "${extra[@]}")
[ -n "$model" ] && args+=(--model "$model")
where=()
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  where=(-C .)  # a task folder that is no repository: cog works in it as it is
fi
args+=("${where[@]}")

cog "${args[@]}" > "$logs/cog.jsonl" 2> "$logs/cog.stderr"
code=$?
if [ "$code" -ne 2 ]; then
  cog thread export --last --format atif -o "$logs/trajectory.json" "${where[@]}" 2>> "$logs/cog.stderr"
fi
python="${COG_PYTHON:-$(dirname "$(readlink -f "$(command -v cog)")")/python}"
[ -x "$python" ] || python=python3
here="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
reader="${COG_HOME:-/opt/cog}/read_back.py"
[ -f "$reader" ] || reader="$here/../read_back.py"
"$python" "$reader" "$logs/cog.jsonl" "$code" > "$logs/usage.json"
exit "$code"
