#!/usr/bin/env bash
# The action's last step: fail the job with cog's own exit code when the run did not succeed.
set -euo pipefail
code="${COG_EXIT_CODE:-}"
if [ -z "$code" ]; then
  echo "::error title=cog::cog did not run (see the step above)"
  exit 1
fi
if [ "$code" != "0" ]; then
  echo "::error title=cog::cog exited $code (1: the task failed, a budget was spent or the answer never matched the schema; 2: usage or configuration)"
  exit "$code"
fi
