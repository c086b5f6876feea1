"""The Node reporters ``run_tests`` passes to vitest, jest, mocha and ``node --test`` on their command line.

Each writes one JSON line per finished test to the inherited pipe fd named by ``COGCLI_REPORT_FD``
(the same lines the pytest plugin writes); standalone files with no dependencies, loaded by the
workspace's own runner from here.
"""

from pathlib import Path

REPORTER_DIR = Path(__file__).resolve().parent
VITEST_REPORTER = REPORTER_DIR / "cog-vitest-reporter.mjs"
JEST_REPORTER = REPORTER_DIR / "cog-jest-reporter.cjs"
NODE_TEST_REPORTER = REPORTER_DIR / "cog-node-test-reporter.mjs"
MOCHA_REPORTER = REPORTER_DIR / "cog-mocha-reporter.cjs"
