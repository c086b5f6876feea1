// cogcli's reporter for vitest 1, 2 and 3 (--reporter=<this file>): one JSON line per finished
// test to the pipe fd in COGCLI_REPORT_FD. Standalone: Node's standard library only.
//
// vitest 3 calls onTestCaseResult / onTestModuleEnd / onTestRunEnd (its reported-tasks API);
// vitest 1 and 2 have only onTaskUpdate (results as they come, by task id) and onFinished (every
// file's task tree). Which one runs is decided at onInit from vitest's version; a test is
// reported once either way.
import { fstatSync, writeSync } from "node:fs";

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

const OUTCOME = { passed: "passed", pass: "passed", failed: "failed", fail: "failed", skipped: "skipped", skip: "skipped",
  pending: "skipped", todo: "skipped" };

function names(testCase) {
  const parts = [testCase.name];
  let parent = testCase.parent;
  while (parent && parent.type === "suite") {
    parts.unshift(parent.name);
    parent = parent.parent;
  }
  return parts.join(" > ");
}

function taskNames(task) {
  // vitest 1/2: a test's suites up to its file (the file is a suite too, with a filepath)
  const parts = [task.name];
  let suite = task.suite;
  while (suite && suite !== task.file && !suite.filepath) {
    if (suite.name) parts.unshift(suite.name);
    suite = suite.suite;
  }
  return parts.join(" > ");
}

function errorText(errors) {
  return (errors ?? []).map((e) => [e.message, e.diff, e.stack ?? e.stackStr].filter(Boolean).join("\n")).join("\n\n").slice(-20000) || null;
}

function shown(value) {
  // vitest serialises an assertion's values to text already; anything else, as JSON
  if (value === undefined) return null;
  if (typeof value === "string") return value.slice(0, 2000);
  try {
    return JSON.stringify(value)?.slice(0, 2000) ?? null;
  } catch {
    return String(value).slice(0, 2000);
  }
}

export default class CogVitestReporter {
  constructor() {
    this.broken = Number.isNaN(fd);
    this.reported = new Set();
    this.legacy = false;
  }

  emit(obj) {
    if (this.broken) return;
    try {
      writeSync(fd, JSON.stringify(obj) + "\n");
    } catch {
      this.broken = true;
    }
  }

  onInit(ctx) {
    this.ctx = ctx;
    const major = Number.parseInt(String(ctx?.version ?? "0"), 10);
    this.legacy = !(major >= 3); // vitest 1 has no ctx.version
    this.emit({ event: "start", runner: "vitest", version: ctx?.version ?? null, pid: process.pid });
  }

  test({ id, file, name, state, errors, duration, note, line }) {
    if (this.reported.has(id)) return;
    this.reported.add(id);
    const outcome = OUTCOME[state] ?? state;
    const first = errors?.[0];
    this.emit({
      event: "test",
      stop: Date.now() / 1000,
      file,
      name,
      outcome,
      duration: (duration ?? 0) / 1000,
      message: outcome === "failed" ? String(first?.message ?? "failed").split("\n")[0] : (note ?? null),
      longrepr: outcome === "failed" ? errorText(errors) : null,
      expected: outcome === "failed" ? shown(first?.expected) : null,
      actual: outcome === "failed" ? shown(first?.actual) : null,
      line: line ?? null,
    });
  }

  // -- vitest 3 ---------------------------------------------------------------------------

  onTestCaseResult(testCase) {
    const result = testCase.result();
    const errors = result.errors ?? [];
    const diagnostic = typeof testCase.diagnostic === "function" ? testCase.diagnostic() : undefined;
    const location = errors[0]?.stacks?.find((s) => s.file === testCase.module.moduleId);
    this.test({ id: testCase.id, file: testCase.module.moduleId, name: names(testCase), state: result.state, errors,
      duration: diagnostic?.duration, note: result.note, line: location?.line ?? testCase.location?.line });
  }

  onTestModuleEnd(testModule) {
    this.moduleEnded(testModule);
  }

  moduleEnded(testModule) {
    if (this.reported.has(`module:${testModule.moduleId}`)) return;
    this.reported.add(`module:${testModule.moduleId}`);
    const errors = typeof testModule.errors === "function" ? testModule.errors() : [];
    if (errors.length) {
      this.emit({ event: "collect_error", file: testModule.moduleId, message: String(errors[0].message).split("\n")[0], longrepr: errorText(errors) });
    }
    // tests that ended without a result event (skipped with the whole module)
    for (const testCase of testModule.children.allTests()) this.onTestCaseResult(testCase);
  }

  onTestRunEnd(testModules) {
    // a module that failed to load never ends on its own
    for (const testModule of testModules ?? []) this.moduleEnded(testModule);
    this.emit({ event: "finish" });
  }

  // -- vitest 1 and 2 -----------------------------------------------------------------------

  legacyTest(task) {
    if (task.type !== "test" && task.type !== "custom") return;
    const state = task.result?.state ?? (task.mode === "skip" || task.mode === "todo" ? "skip" : null);
    if (!["pass", "fail", "skip", "todo"].includes(state)) return; // still running
    const errors = task.result?.errors ?? [];
    const location = errors[0]?.stacks?.find((s) => s.file === task.file?.filepath);
    this.test({ id: task.id, file: task.file?.filepath ?? null, name: taskNames(task), state, errors,
      duration: task.result?.duration, note: task.mode === "todo" ? "todo" : null, line: location?.line ?? task.location?.line });
  }

  onTaskUpdate(packs) {
    if (!this.legacy) return;
    for (const [id] of packs ?? []) {
      const task = this.ctx?.state?.idMap?.get(id);
      if (task) this.legacyTest(task);
    }
  }

  onFinished(files) {
    if (!this.legacy) return;
    const walk = (task) => {
      if (task.tasks) task.tasks.forEach(walk);
      else this.legacyTest(task);
    };
    for (const file of files ?? []) {
      const errors = file.result?.errors ?? [];
      if (errors.length && !this.reported.has(`module:${file.filepath}`)) {
        this.reported.add(`module:${file.filepath}`);
        this.emit({ event: "collect_error", file: file.filepath, message: String(errors[0].message).split("\n")[0], longrepr: errorText(errors) });
      }
      walk(file);
    }
    this.emit({ event: "finish" });
  }
}
