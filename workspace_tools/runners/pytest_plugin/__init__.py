"""Holds ``cogcli_pytest_stream.py``, the pytest plugin ``run_tests`` loads into the workspace's pytest.

This directory (not the package) is put on ``PYTHONPATH`` of the pytest it starts, so the plugin
loads in the workspace's own virtualenv where cogcli is not installed. Keep the plugin standalone:
stdlib and pytest only.
"""

from pathlib import Path

PLUGIN_DIR = Path(__file__).resolve().parent
PLUGIN_MODULE = "cogcli_pytest_stream"
#: the env var holding the number of the inherited pipe fd the plugin writes its JSON lines to
REPORT_FD_ENV = "COGCLI_PYTEST_REPORT_FD"
