'use strict';
// Aster's taint engine for JavaScript and TypeScript (and EJS and Handlebars
// templates): reads the repository at --root, follows input from its sources
// to its sinks, and writes SARIF 2.1.0 on stdout. It exits 0 whenever it
// could write its report, findings or not.
//
// Usage: node main.js [--root /work] [--files-from FILE|-] [--max-file-bytes N]
//        [--file-budget-ms N] [--file-budget-steps N] [--max-results N] [--modules DIR]
//        [--memory-mb N] [FILE...]
//
// Each target file is analysed in a worker thread under a budget of CPU time: a
// file past it is stopped (the thread is replaced) and named in the report,
// so that no file stalls the review.

const fs = require('fs');
const path = require('path');
const { Worker } = require('worker_threads');
const files = require('./files');
const sarif = require('./sarif');

const VERSION = '1.0.0';

function usage(msg) {
  process.stderr.write(`taint: ${msg}\nusage: main.js [--root DIR] [--files-from FILE|-] [--max-file-bytes N] [--file-budget-ms N] [--max-results N] [FILE...]\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const o = { root: '/work', filesFrom: null, maxBytes: 2 << 20, budgetMs: 10000, maxSteps: 50000000, maxResults: 5000, modulesDir: '/opt/aster/eslint/node_modules', files: [], memoryMb: 1024 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    const num = (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n <= 0) usage(`${a}: ${v} is not a positive integer`);
      return n;
    };
    switch (a) {
      case '--root': o.root = next(); break;
      case '--files-from': o.filesFrom = next(); break;
      case '--max-file-bytes': o.maxBytes = num(next()); break;
      case '--file-budget-ms': o.budgetMs = num(next()); break;
      case '--file-budget-steps': o.maxSteps = num(next()); break;
      case '--max-results': o.maxResults = num(next()); break;
      case '--modules': o.modulesDir = next(); break;
      case '--memory-mb': o.memoryMb = num(next()); break;
      case '--': o.files.push(...argv.slice(i + 1)); i = argv.length; break;
      default:
        if (a.startsWith('--')) usage(`unknown option ${a}`);
        o.files.push(a);
    }
  }
  return o;
}

// clean makes a listed name a path relative to root, or null when it is not
// one (absolute elsewhere, escaping with ..).
function clean(root, name) {
  let p = name.replace(/\\/g, '/');
  if (p.startsWith(root.replace(/\/$/, '') + '/')) p = p.slice(root.replace(/\/$/, '').length + 1);
  p = path.posix.normalize(p).replace(/^\.\//, '');
  if (p === '.' || p.startsWith('../') || p === '..' || path.posix.isAbsolute(p)) return null;
  return p;
}

function listed(o) {
  let names = o.files.slice();
  if (o.filesFrom !== null) {
    const data = o.filesFrom === '-' ? fs.readFileSync(0, 'utf8') : fs.readFileSync(o.filesFrom, 'utf8');
    names = names.concat(data.split(/[\0\n]/).map((s) => s.replace(/\r$/, '')).filter((s) => s !== ''));
  }
  return names;
}

// targets lists the files to analyse: the listed ones (sources; templates
// bring the code that renders them), or every source file of the tree.
function targets(o) {
  const names = listed(o);
  if (names.length === 0 && o.filesFrom === null) return files.walk(o.root).filter(files.isSource);
  const out = new Set();
  const tpl = [];
  for (const n of names) {
    const p = clean(o.root, n);
    if (!p) continue;
    if (p.split('/').includes('node_modules')) continue;
    if (files.isSource(p)) out.add(p);
    else if (files.isTemplate(p)) tpl.push(p);
  }
  if (tpl.length > 0) for (const p of renderers(o.root, tpl)) out.add(p);
  return [...out].sort();
}

// renderers finds the source files that name one of the templates (by its
// base name without extension): the code whose data reaches them.
function renderers(root, tpl) {
  const stems = [...new Set(tpl.map((t) => path.posix.basename(t).replace(/\.[^.]+$/, '')))].filter((s) => s.length >= 2);
  if (stems.length === 0) return [];
  const out = [];
  const all = files.walk(root).filter(files.isSource);
  for (const f of all) {
    let st;
    try {
      st = fs.lstatSync(path.join(root, f));
    } catch {
      continue;
    }
    if (!st.isFile() || st.size > 1 << 20) continue;
    const txt = fs.readFileSync(path.join(root, f), 'utf8');
    if (stems.some((s) => txt.includes(`'${s}'`) || txt.includes(`"${s}"`) || txt.includes(`/${s}'`) || txt.includes(`/${s}"`) || txt.includes(`\`${s}\``))) out.push(f);
    if (out.length >= 200) break;
  }
  return out;
}

class Pool {
  constructor(o) {
    this.o = o;
    this.worker = null;
  }
  start() {
    this.worker = new Worker(path.join(__dirname, 'worker.js'), {
      workerData: { root: this.o.root, maxBytes: this.o.maxBytes, modulesDir: this.o.modulesDir, maxSteps: this.o.maxSteps },
      resourceLimits: { maxOldGenerationSizeMb: this.o.memoryMb, stackSizeMb: 8 },
      stdout: false, stderr: false,
    });
    this.worker.unref();
  }
  // run analyses one file, resolving with its result or a note when it was
  // stopped.
  run(rel) {
    if (!this.worker) this.start();
    const w = this.worker;
    const budget = this.o.budgetMs;
    return new Promise((resolve) => {
      let done = false;
      const t0 = Date.now();
      const finish = (r, restart) => {
        if (done) return;
        done = true;
        clearInterval(timer);
        w.off('message', onMsg);
        w.off('error', onErr);
        w.off('exit', onExit);
        if (restart) {
          w.terminate().catch(() => {});
          this.worker = null;
        }
        resolve(r);
      };
      const onMsg = (r) => finish(r, false);
      const onErr = (e) => {
        const oom = e && (e.code === 'ERR_WORKER_OUT_OF_MEMORY' || /out of memory|heap/i.test(String(e.message)));
        finish({ path: rel, findings: [], ms: Date.now() - t0, notes: [{ file: rel, level: 'warning', text: oom ? `skipped: over the memory budget (${this.o.memoryMb} MB)` : `skipped: the engine failed on it (${String(e && e.message).slice(0, 200)})` }] }, true);
      };
      const onExit = () => onErr(new Error('worker exited'));
      // The worker checks its own deadline (CPU time); this one catches a
      // walk that does not reach a check (a parser on a pathological input):
      // 2 s of CPU time past the budget, or, should the thread not run at
      // all, ten times the budget in wall time.
      const c0 = cpuMs();
      const timer = setInterval(() => {
        if (cpuMs() - c0 <= budget + 2000 && Date.now() - t0 <= 10 * budget + 2000) return;
        finish({ path: rel, findings: [], ms: Date.now() - t0, notes: [{ file: rel, level: 'warning', text: `skipped: over the per-file budget (${budget} ms)` }] }, true);
      }, Math.min(250, budget));
      w.on('message', onMsg);
      w.on('error', onErr);
      w.on('exit', onExit);
      w.postMessage({ path: rel, budgetMs: budget });
    });
  }
  stop() {
    if (this.worker) this.worker.terminate().catch(() => {});
  }
}

// cpuMs is the process's CPU time in milliseconds (the per-file budget is
// CPU time: see analyze.js).
function cpuMs() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function better(a, b) {
  const rank = (l) => (l === 'error' ? 3 : l === 'warning' ? 2 : 1);
  if (rank(a.level) !== rank(b.level)) return rank(a.level) > rank(b.level);
  if (a.steps.length !== b.steps.length) return a.steps.length < b.steps.length;
  const sa = a.steps[0], sb = b.steps[0];
  if (!sa || !sb) return false;
  const ka = `${sa.file}\u0000${String(sa.line).padStart(8, '0')}\u0000${String(sa.col).padStart(6, '0')}\u0000${sa.text}`;
  const kb = `${sb.file}\u0000${String(sb.line).padStart(8, '0')}\u0000${String(sb.col).padStart(6, '0')}\u0000${sb.text}`;
  return ka < kb;
}

// judgedOf lists the judged sinks of the target files, sorted.
function judgedOf(judged, targets) {
  const out = {};
  for (const f of [...judged.keys()].sort()) {
    if (!targets.has(f)) continue;
    out[f] = [...judged.get(f).values()].sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  }
  return out;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  o.root = path.resolve(o.root);
  const t0 = Date.now();
  const list = targets(o);
  const pool = new Pool(o);
  const found = new Map();
  const notes = [];
  const times = [];
  const judged = new Map();
  for (const rel of list) {
    const r = await pool.run(rel);
    times.push({ file: rel, ms: r.ms });
    for (const [f, list] of Object.entries(r.judged || {})) {
      const m = judged.get(f) || new Map();
      judged.set(f, m);
      for (const e of list) if (m.size < 50000) m.set(`${e[0]}\u0000${e[1]}`, e);
    }
    for (const n of r.notes) notes.push(n);
    for (const f of r.findings) {
      const k = `${f.file}\u0000${f.line}\u0000${f.col}\u0000${f.cat}`;
      const old = found.get(k);
      if (!old || better(f, old)) found.set(k, f);
    }
  }
  pool.stop();
  let findings = [...found.values()];
  if (findings.length > o.maxResults) {
    findings.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.line - b.line));
    notes.push({ file: '.', level: 'warning', text: `reported the first ${o.maxResults} of ${findings.length} findings` });
    findings = findings.slice(0, o.maxResults);
  }
  times.sort((a, b) => b.ms - a.ms || (a.file < b.file ? -1 : 1));
  const props = {
    files: list.length,
    ms: Date.now() - t0,
    max_rss_kb: process.resourceUsage().maxRSS,
    cpu_ms: Math.round(cpuMs()),
    max_file_ms: times.length ? times[0].ms : 0,
    slowest: times.slice(0, 5),
    // the sinks judged in each target file, flagged or not: [line, category, basis]
    judged: judgedOf(judged, new Set(list)),
  };
  const out = JSON.stringify(sarif.log(findings, notes, props, VERSION));
  process.stdout.write(out + '\n', () => process.exit(0));
}

main().catch((e) => {
  process.stderr.write(`taint: ${e && e.stack ? e.stack : e}\n`);
  process.exit(3);
});
