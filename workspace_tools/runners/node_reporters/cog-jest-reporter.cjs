// cogcli's reporter for jest (--reporters=<this file>): one JSON line per finished test to the
// pipe fd in COGCLI_REPORT_FD. Standalone: Node's standard library only.
"use strict";
const { fstatSync, writeSync } = require("node:fs");

const fd = (() => {
  // only the pipe cog passed: a stray number may be one of node's own descriptors
  const inherited = Number.parseInt(process.env.COGCLI_REPORT_FD ?? "", 10);
  try {
    return fstatSync(inherited).isFIFO() ? inherited : NaN;
  } catch {
    return NaN;
  }
})();
delete process.env.COGCLI_REPORT_FD;

function shown(value) {
  if (value === undefined) return "undefined";
  try {
    return (typeof value === "string" ? JSON.stringify(value) : require("node:util").inspect(value, { depth: 4, breakLength: Infinity })).slice(0, 2000);
  } catch {
    return String(value).slice(0, 2000);
  }
}

class CogJestReporter {
  constructor() {
    this.broken = Number.isNaN(fd);
    this.seen = new Map(); // file -> Map(fullName -> times reported)
    this.emit({ event: "start", runner: "jest", pid: process.pid });
  }

  emit(obj) {
    if (this.broken) return;
    try {
      writeSync(fd, JSON.stringify(obj) + "\n");
    } catch {
      this.broken = true;
    }
  }

  onRunStart(results) {
    if (results && typeof results.numTotalTestSuites === "number") this.emit({ event: "files", count: results.numTotalTestSuites });
  }

  report(file, r) {
    const seen = this.seen.get(file) ?? new Map();
    this.seen.set(file, seen);
    const name = r.fullName || [...(r.ancestorTitles ?? []), r.title].join(" ");
    seen.set(name, (seen.get(name) ?? 0) + 1);
    const outcome = { passed: "passed", failed: "failed", pending: "skipped", skipped: "skipped", todo: "skipped", disabled: "skipped" }[r.status] ?? r.status;
    const failures = (r.failureMessages ?? []).join("\n\n");
    const message = failures ? failures.split("\n").find((l) => l.trim()) ?? null : null;
    // expect()'s values, when the matcher gave them (toBe, toEqual …)
    const matcher = (r.failureDetails ?? []).map((d) => d?.matcherResult).find((m) => m && ("expected" in m || "actual" in m));
    this.emit({
      event: "test",
      stop: Date.now() / 1000,
      file,
      name: [...(r.ancestorTitles ?? []), r.title].join(" > "),
      outcome,
      duration: (r.duration ?? 0) / 1000,
      message,
      longrepr: failures ? failures.slice(-20000) : null,
      expected: matcher ? shown(matcher.expected) : null,
      actual: matcher ? shown(matcher.actual) : null,
      line: r.location?.line ?? null,
    });
  }

  onTestCaseResult(test, result) {
    this.report(test.path, result);
  }

  onTestFileResult(test, fileResult) {
    if (fileResult.testExecError || (fileResult.failureMessage && !(fileResult.testResults ?? []).length)) {
      const err = fileResult.testExecError;
      const text = fileResult.failureMessage || (err && (err.stack || err.message)) || "test file failed to run";
      this.emit({ event: "collect_error", file: test.path, message: String(err?.message ?? text).split("\n")[0], longrepr: String(text).slice(-20000) });
      return;
    }
    // tests onTestCaseResult did not report (skipped ones, an older jest)
    const seen = this.seen.get(test.path) ?? new Map();
    for (const r of fileResult.testResults ?? []) {
      const name = r.fullName || [...(r.ancestorTitles ?? []), r.title].join(" ");
      const n = seen.get(name) ?? 0;
      if (n > 0) seen.set(name, n - 1);
      else this.report(test.path, r);
    }
    this.seen.delete(test.path);
  }

  onRunComplete() {
    this.emit({ event: "finish" });
  }

  getLastError() {
    return undefined;
  }
}

module.exports = CogJestReporter;
