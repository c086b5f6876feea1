// cogcli's reporter for vitest 3+ (--reporter=<this file>): one JSON line per finished test to the
// pipe fd in COGCLI_REPORT_FD. Standalone: Node's standard library only.
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

function names(testCase) {
  const parts = [testCase.name];
  let parent = testCase.parent;
  while (parent && parent.type === "suite") {
    parts.unshift(parent.name);
    parent = parent.parent;
  }
  return parts.join(" > ");
}

function errorText(errors) {
  return (errors ?? []).map((e) => [e.message, e.diff, e.stack].filter(Boolean).join("\n")).join("\n\n").slice(-20000) || null;
}

export default class CogVitestReporter {
  constructor() {
    this.broken = Number.isNaN(fd);
    this.reported = new Set();
  }

  emit(obj) {
    if (this.broken) return;
    try {
      writeSync(fd, JSON.stringify(obj) + "\n");
    } catch {
      this.broken = true;
    }
  }

  onInit() {
    this.emit({ event: "start", runner: "vitest", pid: process.pid });
  }

  onTestCaseResult(testCase) {
    if (this.reported.has(testCase.id)) return;
    this.reported.add(testCase.id);
    const result = testCase.result();
    const outcome = { passed: "passed", failed: "failed", skipped: "skipped", pending: "skipped" }[result.state] ?? result.state;
    const errors = result.errors ?? [];
    const diagnostic = typeof testCase.diagnostic === "function" ? testCase.diagnostic() : undefined;
    const location = errors[0]?.stacks?.find((s) => s.file === testCase.module.moduleId);
    this.emit({
      event: "test",
      stop: Date.now() / 1000,
      file: testCase.module.moduleId,
      name: names(testCase),
      outcome,
      duration: (diagnostic?.duration ?? 0) / 1000,
      message: outcome === "failed" ? (errors[0]?.message ?? "failed").split("\n")[0] : (result.note ?? null),
      longrepr: outcome === "failed" ? errorText(errors) : null,
      line: location?.line ?? testCase.location?.line ?? null,
    });
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
}
