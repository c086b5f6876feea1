// cogcli's reporter for mocha (--reporter=<this file>): one JSON line per finished test to the pipe
// fd in COGCLI_REPORT_FD, and one short line per test on stdout for the person. Standalone: Node's
// standard library only; mocha's reporter contract (a constructor given the runner, its events
// "start", "pass", "fail", "pending", "end") has not changed since mocha 4.
"use strict";
const { fstatSync, writeSync } = require("node:fs");
const { inspect } = require("node:util");

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

function shown(err, key) {
  if (!err || typeof err !== "object" || !(key in err)) return null;
  const value = err[key];
  return (typeof value === "string" ? JSON.stringify(value) : inspect(value, { depth: 4, breakLength: Infinity })).slice(0, 2000);
}

function title(test) {
  return typeof test.titlePath === "function" ? test.titlePath().join(" > ") : test.fullTitle();
}

class CogMochaReporter {
  constructor(runner) {
    let broken = Number.isNaN(fd);
    const emit = (obj) => {
      if (broken) return;
      try {
        writeSync(fd, JSON.stringify(obj) + "\n");
      } catch {
        broken = true;
      }
    };
    const say = (line) => process.stdout.write(line + "\n");
    const test = (t, outcome, err) => {
      say(`${outcome} ${title(t)}`);
      emit({
        event: "test",
        stop: Date.now() / 1000,
        file: t.file ?? null,
        name: title(t),
        outcome,
        duration: (t.duration ?? 0) / 1000,
        message: err ? String(err.message ?? err).split("\n").find((l) => l.trim()) ?? String(err) : null,
        longrepr: err ? String(err.stack ?? err.message ?? err).slice(-20000) : null,
        expected: err ? shown(err, "expected") : null,
        actual: err ? shown(err, "actual") : null,
        line: null,
      });
    };
    runner.once("start", () => emit({ event: "start", runner: "mocha", pid: process.pid }));
    runner.on("pass", (t) => test(t, "passed"));
    runner.on("pending", (t) => test(t, "skipped"));
    runner.on("fail", (t, err) => test(t, "failed", err));
    runner.once("end", () => emit({ event: "finish" }));
  }
}

module.exports = CogMochaReporter;
