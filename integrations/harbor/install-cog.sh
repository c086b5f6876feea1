#!/usr/bin/env bash
# Installs cog in a benchmark's task container (Harbor runs an installed agent's install script
# once per container): a virtualenv at $COG_HOME (default /opt/cog) with cogcli, `cog` and
# `cog-harbor-run` on PATH (/usr/local/bin). COG_VERSION picks a release; COG_SOURCE installs from
# a path or a pip requirement instead (e.g. "git+https://…/cogcli@main"). Needs python3 ≥ 3.11
# (installed with apt-get when missing and apt-get exists).
set -euo pipefail

home="${COG_HOME:-/opt/cog}"
bin_dir="${COG_BIN_DIR:-/usr/local/bin}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if ! command -v python3 >/dev/null || ! python3 -c 'import sys, venv; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  if command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv python3-pip git >/dev/null
  else
    echo "cog needs python3 3.11 or newer with venv; install it in the image" >&2
    exit 1
  fi
fi
if [ -n "${COG_SOURCE:-}" ]; then
  spec="$COG_SOURCE"
elif [ -n "${COG_VERSION:-}" ]; then
  spec="cogcli==$COG_VERSION"
else
  spec="cogcli"
fi
python3 -m venv "$home"
"$home/bin/python" -m pip install --quiet --disable-pip-version-check "$spec"
mkdir -p "$bin_dir"
ln -sf "$home/bin/cog" "$bin_dir/cog"
install -m 0755 "$here/run-task.sh" "$bin_dir/cog-harbor-run"
install -m 0644 "$here/../read_back.py" "$home/read_back.py"
"$bin_dir/cog" --version
echo "INSTALL SUCCESS!"
