'use strict';
// One file's analysis, the same in the worker thread and in tests: its
// findings (with their paths as plain steps), its notes, its time.

const { Analyzer, Budget, init, cpuMs } = require('./analyze');
const models = require('./models');
const parse = require('./parse');
const files = require('./files');

init(models);

let opts = null;
let A = null;

function setup(o) {
  opts = o;
  if (o.modulesDir) parse.setModulesDir(o.modulesDir);
  A = new Analyzer({ root: o.root, maxBytes: o.maxBytes, maxSteps: o.maxSteps });
}

function plain(f) {
  return {
    cat: f.cat, file: f.file, line: f.line, col: f.col, endLine: f.endLine, endCol: f.endCol, level: f.level, msg: f.msg,
    cwe: f.cwe, steps: f.trace.list().map((s) => ({ text: s.text, file: s.file, line: s.line, col: s.col })),
  };
}

// file analyses one target file: a module's top level and every function in
// it, or (for a template) nothing by itself — templates are followed from
// the code that renders them.
function file(rel, budgetMs) {
  try {
    parse.preload(rel);
  } catch {
    // A parser that does not load: the file's parse says so below.
  }
  const t0 = Date.now();
  A.deadline = cpuMs() + budgetMs;
  A.ticks = 0;
  A.invokes = 0;
  A.memo = new Map();
  A.notes = [];
  A.judged = new Map();
  let findings = [];
  let over = false;
  let deep = false;
  try {
    if (files.isSource(rel)) {
      const mod = A.module(rel);
      if (mod) A.runEntries(mod);
    }
    findings = A.take().map(plain);
  } catch (e) {
    if (e instanceof Budget) over = true;
    else if (e instanceof RangeError || e instanceof parse.TooDeep) deep = true;
    else if (process.env.ASTER_TAINT_DEBUG) throw e;
    else {
      A.notes.push({ file: rel, text: `internal error: ${String(e && e.message).slice(0, 200)}`, level: 'note' });
      findings = A.take().map(plain);
    }
  }
  const notes = A.notes;
  if (over || deep) {
    // Start again clean: what a stopped walk left is not trusted.
    findings = [];
    setup(opts);
    notes.length = 0;
    notes.push(over
      ? { file: rel, text: `skipped: over the per-file budget (${budgetMs} ms, ${opts.maxSteps || 'no'} steps)`.replace(', no steps', ''), level: 'warning' }
      : { file: rel, text: 'skipped: nested too deeply to analyse', level: 'warning' });
  }
  // Every file this walk judged sinks in (a required module's functions are
  // walked from the file that requires it, and memoised), by file.
  const judged = {};
  if (!over && !deep && A.judged) {
    for (const [f, m] of A.judged) judged[f] = [...m.values()];
  }
  return { path: rel, findings, notes, judged, ms: Date.now() - t0 };
}

module.exports = { setup, file };
