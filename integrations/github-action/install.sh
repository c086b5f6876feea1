#!/usr/bin/env bash
# The action's install step: cogcli (with its OpenTelemetry extra) in a virtualenv of its own under
# $RUNNER_TEMP, whose bin/ goes on the job's PATH ($GITHUB_PATH). COG_VERSION picks a release from
# the package index; empty installs the action's own checkout ($GITHUB_ACTION_PATH).
set -euo pipefail

venv="${RUNNER_TEMP:-/tmp}/cog-venv"
python="${COG_PYTHON:-python3}"
"$python" -m venv "$venv"
if [ -n "${COG_VERSION:-}" ]; then
  case "$COG_VERSION" in
    *[!0-9A-Za-z.+-]*) echo "::error::cog-version must be a version such as 0.1.0, got: $COG_VERSION"; exit 2 ;;
  esac
  spec="cogcli[otel]==$COG_VERSION"
else
  spec="cogcli[otel] @ file://${GITHUB_ACTION_PATH:?the action path is not set}"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$spec"
echo "$venv/bin" >> "${GITHUB_PATH:?GITHUB_PATH is not set: run this as a GitHub Actions step}"
"$venv/bin/cog" --version
