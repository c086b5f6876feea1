// cogcli's reporter for `node --test` (--test-reporter=<this file>): one JSON line per finished
// test to the pipe fd in COGCLI_REPORT_FD, or to the named pipe at COGCLI_REPORT_PATH (a test
// script run by npm, which hands its scripts no inherited fd). Standalone: Node's standard library only.
import { fstatSync, openSync, writeSync } from "node:fs";
import { inspect } from "node:util";

function reportFd() {
  const path = process.env.COGCLI_REPORT_PATH;
  delete process.env.COGCLI_REPORT_PATH; // a node --test that a test starts reports nothing here
  if (path) {
    try {
      const opened = openSync(path, "w");
      if (fstatSync(opened).isFIFO()) return opened;
    } catch {}
    return NaN;
  }
  const inherited = Number.parseInt(process.env.COGCLI_REPORT_FD ?? "", 10);
  delete process.env.COGCLI_REPORT_FD;
  // only the pipe cog passed: a number that reached a process cog did not start (through npm,
  // which passes no fd down) may be one of node's own descriptors, which must not be written to
  try {
    return fstatSync(inherited).isFIFO() ? inherited : NaN;
  } catch {
    return NaN;
  }
}

const fd = reportFd();
let broken = Number.isNaN(fd);

function emit(obj) {
  if (broken) return;
  try {
    writeSync(fd, JSON.stringify(obj) + "\n");
  } catch {
    broken = true;
  }
}

function errorText(error) {
  if (!error) return null;
  const cause = error.cause ?? error;
  const text = cause && cause.stack ? String(cause.stack) : String(cause?.message ?? cause);
  return text.slice(-20000);
}

function errorMessage(error) {
  if (!error) return null;
  const cause = error.cause ?? error;
  const message = cause?.message ?? String(cause);
  return String(message).split("\n").find((l) => l.trim()) ?? String(message);
}

function value(error, key) {
  // an assertion's expected and actual values (assert.strictEqual's), as node prints them
  const cause = error?.cause ?? error;
  if (!cause || typeof cause !== "object" || !(key in cause) || cause.code !== "ERR_ASSERTION") return null;
  return inspect(cause[key], { depth: 4, breakLength: Infinity }).slice(0, 2000);
}

export default async function* cogReporter(source) {
  emit({ event: "start", runner: "node", version: process.version, pid: process.pid });
  const stacks = new Map(); // file -> names of the tests open at each nesting level
  const stderr = new Map(); // file -> what it wrote on stderr (the error of a file that did not load)
  for await (const { type, data } of source) {
    if (type === "test:stderr" && data.file) {
      const text = (stderr.get(data.file) ?? "") + data.message;
      stderr.set(data.file, text.slice(-20000));
      continue;
    }
    if (type === "test:start") {
      const stack = stacks.get(data.file) ?? [];
      stack.length = data.nesting;
      stack[data.nesting] = data.name;
      stacks.set(data.file, stack);
      continue;
    }
    if (type !== "test:pass" && type !== "test:fail") continue;
    const details = data.details ?? {};
    const error = details.error;
    if (details.type === "suite" || error?.failureType === "subtestsFailed") continue;
    const stack = (stacks.get(data.file) ?? []).slice(0, data.nesting);
    const title = [...stack, data.name].join(" > ");
    const failed = type === "test:fail";
    if (failed && data.file && data.name === data.file) {
      const text = stderr.get(data.file) || errorText(error);
      const message = (text ?? "").split("\n").find((l) => /^\w*Error\b/.test(l)) ?? errorMessage(error);
      emit({ event: "collect_error", file: data.file, message, longrepr: text });
      continue;
    }
    let outcome = failed ? "failed" : "passed";
    if (data.skip !== undefined || data.todo !== undefined) outcome = "skipped";
    const reason = typeof data.skip === "string" ? data.skip : typeof data.todo === "string" ? data.todo : null;
    emit({
      event: "test",
      stop: Date.now() / 1000,
      file: data.file ?? null,
      name: title,
      outcome,
      duration: (details.duration_ms ?? 0) / 1000,
      message: failed ? errorMessage(error) : reason,
      longrepr: failed ? errorText(error) : null,
      expected: failed ? value(error, "expected") : null,
      actual: failed ? value(error, "actual") : null,
      line: data.line ?? null,
    });
  }
  emit({ event: "finish" });
}
