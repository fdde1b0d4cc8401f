'use strict';
// The interpreter: walks a module's AST in order with abstract values
// (values.js), inlining calls of the module's own functions (and of local
// modules it requires), so that a value is followed from a source through
// assignments, string building, containers, calls and returns to a sink.
// Models of libraries and frameworks (sources, sinks, sanitizers) are in
// models.js; templates (EJS, Handlebars) in templates.js.

const fs = require('fs');
const path = require('path');
const V = require('./values');
const { Val, Step, Taint, join, concat, text, sanitize, derived, flat, deepTaint, TAINTED } = V;
const { parse, TooDeep } = require('./parse');
const files = require('./files');

// Environment variables that exist to name a program to run (POSIX's EDITOR,
// VISUAL, PAGER; BROWSER, SHELL; GIT_PAGER, MANPAGER...).
const PROGRAM_ENV = /^(?:[A-Z0-9]+_)?(?:EDITOR|VISUAL|PAGER|BROWSER|SHELL|TERMINAL)$/;
// cpuMs is the process's CPU time in milliseconds: the per-file budget is
// CPU time, not wall time, so a busy machine leaves out the same files as an
// idle one (the analyzer's sandbox timeout bounds the wall time). The main
// thread waits while a worker walks a file; the time is the walk's.
function cpuMs() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}
let models = null; // set by init (models requires this module)

// Budget is thrown when a file's time is up.
class Budget extends Error {}

const MAX_DEPTH = 8;         // nested inlined calls
const MAX_INVOKES = 40000;   // inlined calls per file
const MAX_LOOP_NEST = 3;     // loops whose body is walked twice
const MAX_MODULE_BYTES = 2 << 20;

class Scope {
  constructor(parent, isFn, bdepth) {
    this.vars = new Map();
    this.parent = parent;
    this.isFn = isFn;
    this.bdepth = bdepth;
    this.narrow = null; // Map of expression key → sanitized mask
    this.shadow = null; // names this branch scope holds a copy of
  }
  find(name) {
    for (let s = this; s; s = s.parent) if (s.vars.has(name)) return s;
    return null;
  }
}

// Frame is one function being walked.
class Frame {
  constructor(mod, clo, self, depth) {
    this.mod = mod;
    this.clo = clo;
    this.self = self;
    this.depth = depth;
    this.ret = null;
    this.bdepth = 0;
    this.loops = 0;
    this.hapi = false;
    this.args = null;
  }
}

class Analyzer {
  constructor(opts) {
    this.root = opts.root;
    this.maxBytes = opts.maxBytes || MAX_MODULE_BYTES;
    this.modules = new Map();    // path → module record
    this.findings = new Map();   // key → finding
    this.analyzed = new Set();   // function nodes walked at least once
    this.notes = [];             // {file, text}
    this.deadline = Infinity;
    this.maxTicks = opts.maxSteps || Infinity;
    this.ticks = 0;
    this.invokes = 0;
    this.stack = [];
    this.memo = new Map();
    this.templateFiles = null;   // lazily listed
    this.dirty = new Set();      // keys of findings set since the last take()
  }

  // take returns the findings set since the last call.
  take() {
    const out = [];
    for (const k of this.dirty) out.push(this.findings.get(k));
    this.dirty.clear();
    return out;
  }

  // tick is called at every statement and expression: a file's walk ends
  // at its time budget (CPU time, cpuMs) or its step budget (the same on
  // every machine).
  tick() {
    if ((++this.ticks & 1023) === 0 && (cpuMs() > this.deadline || this.ticks > this.maxTicks)) throw new Budget();
  }

  // ---- files and modules ----

  abs(rel) { return path.join(this.root, rel); }

  // readRel reads a file of the tree, refusing anything outside root or too large.
  readRel(rel) {
    if (!rel || rel.startsWith('..') || path.isAbsolute(rel)) return null;
    const p = this.abs(rel);
    let st;
    try {
      st = fs.lstatSync(p);
    } catch {
      return null;
    }
    if (!st.isFile() || st.size > this.maxBytes || !this.inside(p)) return null;
    try {
      return fs.readFileSync(p, 'utf8');
    } catch {
      return null;
    }
  }

  exists(rel) {
    try {
      return fs.lstatSync(this.abs(rel)).isFile() && this.inside(this.abs(rel));
    } catch {
      return false;
    }
  }

  // inside reports whether a path, its directories' links resolved, is in
  // the tree: a directory link out of the snapshot is not followed.
  inside(p) {
    if (this.realRoot === undefined) {
      try {
        this.realRoot = fs.realpathSync(this.root);
      } catch {
        this.realRoot = null;
      }
    }
    if (!this.realRoot) return false;
    let real;
    try {
      real = fs.realpathSync(path.dirname(p));
    } catch {
      return false;
    }
    return real === this.realRoot || real.startsWith(this.realRoot + path.sep);
  }

  // resolve finds the file a relative require of from names, or null.
  resolve(from, spec) {
    let base;
    if (spec.startsWith('./') || spec.startsWith('../') || spec === '.' || spec === '..') {
      base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
    } else if (spec.startsWith('@/') || spec.startsWith('~/')) {
      base = spec.slice(2);
      for (const pre of ['src/', '', 'app/']) {
        const r = this.tryFile(pre + base);
        if (r) return r;
      }
      return null;
    } else {
      return null;
    }
    if (base.startsWith('..')) return null;
    return this.tryFile(base);
  }

  tryFile(base) {
    const exts = ['', '.js', '.ts', '.tsx', '.jsx', '.mjs', '.cjs', '.mts', '.cts'];
    for (const e of exts) if (files.isSource(base + e) && this.exists(base + e)) return base + e;
    // TypeScript sources imported with a .js suffix.
    if (/\.[cm]?js$/.test(base)) {
      const t = base.replace(/\.([cm]?)js$/, '.$1ts');
      if (this.exists(t)) return t;
    }
    for (const e of exts.slice(1)) if (this.exists(base + '/index' + e)) return base + '/index' + e;
    return null;
  }

  // module returns the record of a source file, parsing and running its top
  // level the first time. A file that cannot be read or parsed gives null.
  module(rel) {
    if (this.modules.has(rel)) return this.modules.get(rel);
    const code = this.readRel(rel);
    if (code === null) {
      this.modules.set(rel, null);
      return null;
    }
    const gen = files.generated(code, rel);
    if (gen) {
      this.modules.set(rel, null);
      this.notes.push({ file: rel, text: `skipped: ${gen}`, level: 'warning' });
      return null;
    }
    let ast;
    try {
      ast = parse(code, rel);
    } catch (e) {
      this.modules.set(rel, null);
      if (e instanceof Budget || e instanceof TooDeep) throw e;
      this.notes.push({ file: rel, text: `not parsed: ${oneLine(e.message)}`, level: 'warning', parse: true });
      return null;
    }
    return this.load(rel, ast.__code || code, ast, 'js');
  }

  // load runs a parsed program's top level as a module.
  load(rel, code, ast, kind) {
    const mod = { path: rel, code, ast, kind, scope: null, exportsVal: null, moduleVal: null, entries: false, useServer: false, fns: [] };
    this.modules.set(rel, mod);
    const scope = new Scope(null, true, 0);
    mod.scope = scope;
    const exportsVal = new Val();
    exportsVal.props = new Map();
    const moduleVal = new Val();
    moduleVal.setProp('exports', exportsVal);
    mod.moduleVal = moduleVal;
    scope.vars.set('module', moduleVal);
    scope.vars.set('exports', exportsVal);
    mod.useServer = hasDirective(ast.body, 'use server');
    const fr = new Frame(mod, null, new Val(), 0);
    fr.top = true;
    this.hoist(ast.body, scope, fr);
    for (const st of ast.body) this.execSafe(st, scope, fr);
    return mod;
  }

  exportsOf(mod) {
    return mod.moduleVal.prop('exports') || new Val();
  }

  // runEntries walks every function of the module not yet walked from some
  // call, as an entry point: parameters get the values their names suggest
  // (req, res, ctx ...), closures see their defining scope.
  runEntries(mod) {
    if (mod.entries) return;
    mod.entries = true;
    const fns = [];
    collectFunctions(mod.ast, fns);
    for (const node of fns) {
      if (this.analyzed.has(node)) continue;
      const clo = node.__clo;
      if (!clo) continue;
      try {
        this.entry(clo);
      } catch (e) {
        if (e instanceof Budget || e instanceof RangeError || process.env.ASTER_TAINT_DEBUG) throw e;
        this.notes.push({ file: mod.path, text: `internal error in the function at line ${node.loc.start.line}: ${oneLine(e.message)}`, level: 'note' });
      }
    }
  }

  entry(clo) {
    const node = clo.node;
    const fr0 = new Frame(clo.mod, clo, null, 0);
    const args = models.entryArgs(this, clo, fr0);
    let self = clo.self;
    if (!self) {
      self = clo.cls ? models.instanceOf(this, clo.cls) : new Val();
    }
    this.invoke(clo, self, args, node, null, { entry: true });
  }

  // ---- findings ----

  // judge records that the engine judged a sink of category cat at node,
  // whether it reported it or not: rules without data flow are superseded
  // on these lines only (a sink the engine never looked at keeps them).
  judge(cat, node, fr) {
    if (!this.judged || !node || !node.loc || !fr || !fr.mod) return;
    let m = this.judged.get(fr.mod.path);
    if (!m) {
      m = new Map();
      this.judged.set(fr.mod.path, m);
    }
    // A call's lines, up to its last argument that is not a callback (a
    // callback's body holds other sinks, judged on their own).
    let last = node.loc.end.line;
    if ((node.type === 'CallExpression' || node.type === 'NewExpression') && node.callee && node.callee.loc) {
      last = node.callee.loc.end.line;
      for (const a of node.arguments || []) {
        if (a.loc && !/Function/.test(a.type)) last = Math.max(last, a.loc.end.line);
      }
    }
    const end = Math.min(last, node.loc.start.line + 50);
    for (let l = node.loc.start.line; l <= end && m.size < 50000; l++) m.set(`${l}\u0000${cat}`, [l, cat, 'flow']);
  }

  // report records a finding of category cat at node: the value v (tainted)
  // reached sink (its text). opts: level, msg, col, endNode, file.
  report(cat, node, fr, v, sinkText, opts = {}) {
    const file = opts.file || fr.mod.path;
    const loc = opts.loc || node.loc;
    if (!opts.file && !opts.loc) this.judge(cat, node, fr);
    let tr = null;
    let local = false;
    if (v && v.t) {
      tr = v.t.tr;
      local = v.t.local;
    } else if (v && v.r) {
      tr = v.r;
    }
    const sink = new Step(sinkText, file, loc.start.line, loc.start.column + 1, tr);
    sink.sink = true;
    const key = `${file}\u0000${loc.start.line}\u0000${loc.start.column}\u0000${cat}`;
    const level = opts.level || (local ? 'note' : 'error');
    const src = tr ? tr.source().text : null;
    const msg = opts.msg || (src ? `${src} reaches ${sinkText}` : sinkText);
    const f = { cat, file, line: loc.start.line, col: loc.start.column + 1, endLine: loc.end.line, endCol: loc.end.column + 1, level, msg, trace: sink, cwe: opts.cwe || null };
    const old = this.findings.get(key);
    if (old && !betterFinding(f, old)) return;
    this.findings.set(key, f);
    this.dirty.add(key);
  }

  // step returns v with one more step on its paths (a binding to name).
  step(v, name, node, fr) {
    if (!v || (!v.t && !v.r)) return v;
    const out = v.copy();
    const line = node.loc.start.line, col = node.loc.start.column + 1;
    if (v.t) {
      const last = v.t.tr;
      if (!(last.file === fr.mod.path && last.line === line && last.text === name)) {
        out.t = v.t.with(new Step(clipText(name), fr.mod.path, line, col, last));
      }
    }
    if (v.r) out.r = new Step(clipText(name), fr.mod.path, line, col, v.r);
    // An array's elements went the same way.
    if (v.elem && v.elem !== v && (v.elem.t || v.elem.r)) out.elem = this.step(v.elem, name, node, fr);
    return out;
  }

  // source makes a tainted value whose path starts at node.
  source(text, node, fr, local, fields) {
    const st = new Step(clipText(text), fr.mod.path, node.loc.start.line, node.loc.start.column + 1, null);
    st.src = true;
    const v = new Val();
    v.t = new Taint(st, 0, local);
    v.s = TAINTED;
    v.srcVal = true;
    if (fields) Object.assign(v, fields);
    return v;
  }

  src(node, fr) {
    if (!node || !node.range) return '?';
    return clipText(fr.mod.code.slice(node.range[0], node.range[1]).replace(/\s+/g, ' '));
  }

  // ---- statements ----

  hoist(body, scope, fr) {
    for (const st of body) {
      let d = st;
      if ((d.type === 'ExportNamedDeclaration' || d.type === 'ExportDefaultDeclaration') && d.declaration) d = d.declaration;
      if (d.type === 'FunctionDeclaration' && d.id) {
        scope.vars.set(d.id.name, this.closure(d, scope, fr));
      } else if (d.type === 'VariableDeclaration' && d.kind === 'var') {
        // var belongs to the function, whichever block declares it.
        let fs = scope;
        while (fs.parent && !fs.isFn) fs = fs.parent;
        for (const dc of d.declarations) for (const n of patternNames(dc.id)) if (!fs.vars.has(n)) fs.vars.set(n, V.UNDEF());
      }
    }
  }

  execSafe(st, sc, fr) {
    try {
      this.exec(st, sc, fr);
    } catch (e) {
      if (e instanceof Budget || e instanceof RangeError) throw e;
      if (process.env.ASTER_TAINT_DEBUG) throw e;
      this.notes.push({ file: fr.mod.path, text: `internal error at line ${st.loc ? st.loc.start.line : '?'}: ${oneLine(e.message)}`, level: 'note' });
    }
  }

  execBlock(body, sc, fr) {
    this.hoist(body, sc, fr);
    for (const st of body) {
      this.exec(st, sc, fr);
      if (fr.done) break;
    }
  }

  exec(st, sc, fr) {
    this.tick();
    switch (st.type) {
      case 'ExpressionStatement':
        this.ev(st.expression, sc, fr);
        return;
      case 'VariableDeclaration':
        for (const d of st.declarations) {
          let v = d.init ? this.ev(d.init, sc, fr) : V.UNDEF();
          if (d.init && (d.init.type === 'FunctionExpression' || d.init.type === 'ArrowFunctionExpression' || d.init.type === 'ClassExpression') && d.id.type === 'Identifier' && v.fn && !v.fn.name) v.fn.name = d.id.name;
          this.bind(d.id, v, sc, fr, st.kind === 'var' ? 'var' : 'let', !!d.init);
        }
        return;
      case 'FunctionDeclaration':
        if (st.id && !sc.vars.has(st.id.name)) sc.vars.set(st.id.name, this.closure(st, sc, fr));
        return;
      case 'ClassDeclaration':
        if (st.id) sc.vars.set(st.id.name, this.classVal(st, sc, fr));
        return;
      case 'ReturnStatement': {
        let v = st.argument ? this.ev(st.argument, sc, fr) : V.UNDEF();
        if (v.r && fr.clo && fr.clo.name) models.bound(this, fr.clo.name, v, st, fr);
        if ((v.t || v.r) && fr.clo && fr.clo.name && !fr.top) v = this.step(v, fr.clo.name + '()', st, fr);
        if (fr.hapi && st.argument) models.hapiReturn(this, v, st, fr);
        fr.ret = fr.ret ? join(fr.ret, v) : v;
        if (fr.bdepth === 0) fr.done = true;
        return;
      }
      case 'BlockStatement':
      case 'StaticBlock': {
        const inner = new Scope(sc, false, fr.bdepth);
        this.execBlock(st.body, inner, fr);
        return;
      }
      case 'IfStatement':
        this.execIf(st, sc, fr);
        return;
      case 'ForStatement': {
        const inner = new Scope(sc, false, fr.bdepth);
        if (st.init) {
          if (st.init.type === 'VariableDeclaration') this.exec(st.init, inner, fr);
          else this.ev(st.init, inner, fr);
        }
        this.loop(fr, () => {
          if (st.test) this.ev(st.test, inner, fr);
          this.branch(st.body, inner, fr);
          if (st.update) this.ev(st.update, inner, fr);
        });
        return;
      }
      case 'ForInStatement':
      case 'ForOfStatement': {
        const right = this.ev(st.right, sc, fr);
        let item;
        if (st.type === 'ForInStatement') {
          item = right.t ? derived(right, true) : Val.konst(undefined);
          if (!right.t) item = new Val();
        } else {
          item = this.elemOf(right, st.right, fr);
        }
        this.loop(fr, () => {
          const inner = new Scope(sc, false, fr.bdepth + 1);
          fr.bdepth++;
          try {
            if (st.left.type === 'VariableDeclaration') {
              this.bind(st.left.declarations[0].id, item, inner, fr, 'let', true);
            } else {
              this.assignTo(st.left, item, inner, fr, st.left);
            }
            this.exec(st.body, inner, fr);
          } finally {
            fr.bdepth--;
            fr.done = false;
          }
        });
        return;
      }
      case 'WhileStatement':
      case 'DoWhileStatement':
        this.loop(fr, () => {
          this.ev(st.test, sc, fr);
          this.branch(st.body, sc, fr);
        });
        return;
      case 'TryStatement': {
        // The try block's own checks (if (!x) return;) still hold after it
        // when the catch block leaves too.
        const inner = new Scope(sc, false, fr.bdepth + 1);
        fr.bdepth++;
        try {
          this.execBlock(st.block.body, inner, fr);
        } finally {
          fr.bdepth--;
          fr.done = false;
        }
        if (inner.narrow && inner.narrow.size && (!st.handler || exits(st.handler.body))) {
          addNarrow(sc, [...inner.narrow].map(([key, mask]) => ({ key, mask })));
        }
        if (st.handler) {
          const inner = new Scope(sc, false, fr.bdepth + 1);
          if (st.handler.param) this.bind(st.handler.param, new Val(), inner, fr, 'let', true);
          this.branch(st.handler.body, inner, fr);
        }
        if (st.finalizer) this.exec(st.finalizer, sc, fr);
        return;
      }
      case 'ThrowStatement':
        this.ev(st.argument, sc, fr);
        if (fr.bdepth === 0) fr.done = true;
        return;
      case 'SwitchStatement': {
        const d = this.ev(st.discriminant, sc, fr);
        const inner = new Scope(sc, false, fr.bdepth);
        for (const c of st.cases) {
          if (c.test) this.ev(c.test, inner, fr);
          fr.bdepth++;
          try {
            const cs = new Scope(inner, false, fr.bdepth);
            if (c.test && isConstNode(c.test) && st.discriminant.type === 'Identifier' && d.t) {
              // case 'a': narrows the discriminant to a constant.
              cs.narrow = new Map([[st.discriminant.name, V.ALL]]);
            }
            this.execBlock(c.consequent, cs, fr);
          } finally {
            fr.bdepth--;
            fr.done = false;
          }
        }
        return;
      }
      case 'LabeledStatement':
        this.exec(st.body, sc, fr);
        return;
      case 'WithStatement':
        this.ev(st.object, sc, fr);
        this.exec(st.body, sc, fr);
        return;
      case 'BreakStatement':
      case 'ContinueStatement':
        if (fr.bdepth === 0) fr.done = true;
        return;
      case 'ImportDeclaration':
        this.execImport(st, sc, fr);
        return;
      case 'ExportNamedDeclaration':
        this.execExportNamed(st, sc, fr);
        return;
      case 'ExportDefaultDeclaration': {
        const d = st.declaration;
        let v;
        if (d.type === 'FunctionDeclaration') {
          v = d.id ? (sc.vars.get(d.id.name) || this.closure(d, sc, fr)) : this.closure(d, sc, fr);
        } else if (d.type === 'ClassDeclaration') {
          v = this.classVal(d, sc, fr);
          if (d.id) sc.vars.set(d.id.name, v);
        } else {
          v = this.ev(d, sc, fr);
        }
        if (v.fn) v.fn.exported = true;
        this.exportsOf(fr.mod).setProp('default', v);
        return;
      }
      case 'ExportAllDeclaration': {
        const m = this.require(st.source.value, fr, st);
        const ex = this.exportsOf(fr.mod);
        if (st.exported) {
          ex.setProp(st.exported.name || st.exported.value, m);
        } else if (m.props) {
          for (const [k, x] of m.props) if (k !== 'default' && !ex.props.has(k)) ex.setProp(k, x);
        }
        return;
      }
      case 'TSImportEqualsDeclaration':
        if (st.moduleReference && st.moduleReference.type === 'TSExternalModuleReference') {
          sc.vars.set(st.id.name, this.require(st.moduleReference.expression.value, fr, st));
        }
        return;
      case 'TSExportAssignment':
        fr.mod.moduleVal.setProp('exports', this.ev(st.expression, sc, fr));
        return;
      case 'TSModuleDeclaration':
        if (st.body && st.body.type === 'TSModuleBlock') this.execBlock(st.body.body, new Scope(sc, false, fr.bdepth), fr);
        return;
      case 'TSEnumDeclaration':
        if (st.id) sc.vars.set(st.id.name, new Val());
        return;
      default:
        return; // type declarations, empty statements, debugger
    }
  }

  // branch walks code that may or may not run: assignments in it join with
  // the values before instead of replacing them.
  branch(st, sc, fr) {
    fr.bdepth++;
    try {
      this.exec(st, sc, fr);
    } finally {
      fr.bdepth--;
      fr.done = false;
    }
  }

  loop(fr, body) {
    fr.loops++;
    try {
      body();
      if (fr.loops <= MAX_LOOP_NEST) body();
    } finally {
      fr.loops--;
    }
  }

  execIf(st, sc, fr) {
    this.ev(st.test, sc, fr);
    const yes = models.guards(this, st.test, true, sc, fr);
    const no = models.guards(this, st.test, false, sc, fr);
    const scYes = narrowed(sc, yes, fr);
    this.branch(st.consequent, scYes, fr);
    if (st.alternate) this.branch(st.alternate, narrowed(sc, no, fr), fr);
    // if (!ok(x)) return;  — what follows runs only when the test was false.
    const exitYes = exits(st.consequent), exitNo = st.alternate ? exits(st.alternate) : false;
    if (exitYes && !exitNo) addNarrow(sc, no);
    else if (exitNo && !exitYes) addNarrow(sc, yes);
    if (exitYes && exitNo && fr.bdepth === 0) fr.done = true;
  }

  // ---- bindings ----

  // bind binds a declaration's pattern to v.
  bind(pat, v, sc, fr, kind, initialized) {
    switch (pat.type) {
      case 'Identifier': {
        let target = sc;
        if (kind === 'var') {
          while (target && !target.isFn) target = target.parent;
          target = target || sc;
        }
        v = this.step(v, pat.name, pat, fr);
        if (v.r) models.bound(this, pat.name, v, pat, fr);
        if (kind === 'var' && fr.bdepth > target.bdepth && target.vars.has(pat.name) && initialized) {
          target.vars.set(pat.name, join(target.vars.get(pat.name), v));
        } else {
          target.vars.set(pat.name, v);
        }
        clearNarrow(sc, pat.name);
        return;
      }
      case 'ObjectPattern': {
        const used = [];
        for (const p of pat.properties) {
          if (p.type === 'RestElement') {
            const rest = v.copy();
            if (v.props) {
              rest.props = new Map(v.props);
              for (const k of used) rest.props.delete(k);
            }
            this.bind(p.argument, rest, sc, fr, kind, initialized);
            continue;
          }
          const key = p.computed ? constKey(this.ev(p.key, sc, fr)) : (p.key.name !== undefined ? p.key.name : String(p.key.value));
          if (key !== null) used.push(key);
          const x = key === null ? this.anyProp(v) : this.getProp(v, key, p.key, fr, null);
          this.bind(p.value, x, sc, fr, kind, initialized);
        }
        return;
      }
      case 'ArrayPattern': {
        let i = 0;
        for (const el of pat.elements) {
          if (el) {
            if (el.type === 'RestElement') this.bind(el.argument, v, sc, fr, kind, initialized);
            else this.bind(el, this.index(v, i, el, fr), sc, fr, kind, initialized);
          }
          i++;
        }
        return;
      }
      case 'AssignmentPattern': {
        let x = v;
        if (v.c === undefined && !v.t && !v.props && !v.fn && !v.kind) x = this.ev(pat.right, sc, fr);
        else if (!v.t) x = join(v, this.ev(pat.right, sc, fr));
        this.bind(pat.left, x, sc, fr, kind, initialized);
        return;
      }
      case 'RestElement':
        this.bind(pat.argument, v, sc, fr, kind, initialized);
        return;
      case 'TSParameterProperty':
        this.bind(pat.parameter, v, sc, fr, kind, initialized);
        if (fr.self && pat.parameter.type === 'Identifier') fr.self.setProp(pat.parameter.name, v);
        return;
      default:
        // MemberExpression in a for-of head and the like.
        this.assignTo(pat, v, sc, fr, pat);
    }
  }

  // assign sets an existing variable (or a global) to v.
  assignVar(name, v, sc, fr, node) {
    v = this.step(v, name, node, fr);
    if (v.r) models.bound(this, name, v, node, fr);
    let s = sc.find(name);
    clearNarrow(sc, name);
    // A branch's own copy of the variable (below) takes the value, and so
    // does the variable itself.
    while (s && s.shadow && s.shadow.has(name)) {
      s.vars.set(name, v);
      s = s.parent ? s.parent.find(name) : null;
    }
    if (!s) {
      // An undeclared global: keep it on the module scope.
      fr.mod.scope.vars.set(name, v);
      return;
    }
    const same = this.sameFrame(s, sc);
    if (fr.bdepth > s.bdepth || !same) {
      // Assigned in a branch: the variable may or may not hold the new
      // value after it, but the rest of the branch sees only the new one.
      s.vars.set(name, join(s.vars.get(name), v));
      if (same && sc !== s && sc.bdepth === fr.bdepth) {
        sc.vars.set(name, v);
        if (!sc.shadow) sc.shadow = new Set();
        sc.shadow.add(name);
      }
    } else {
      s.vars.set(name, v);
    }
  }

  sameFrame(target, sc) {
    for (let s = sc; s; s = s.parent) {
      if (s === target) return true;
      if (s.isFn) return false;
    }
    return false;
  }

  // assignTo handles a destructuring or member assignment target.
  assignTo(target, v, sc, fr, node) {
    switch (target.type) {
      case 'Identifier':
        this.assignVar(target.name, v, sc, fr, target);
        return;
      case 'MemberExpression': {
        const obj = this.ev(target.object, sc, fr);
        const key = this.memberKey(target, sc, fr);
        models.propSink(this, obj, key, v, target, node, sc, fr);
        if (key === null) {
          if (obj.props || obj.elem || obj.kind === 'arr') obj.elem = obj.elem ? join(obj.elem, v) : v;
          return;
        }
        if (obj.kind && obj.kind.startsWith('m:')) return;
        const named = this.step(v, this.src(target, fr), target, fr);
        const old = obj.props ? obj.props.get(key) : undefined;
        obj.setProp(key, fr.bdepth > 0 && old && !obj.fresh ? join(old, named) : named);
        if (obj === fr.mod.moduleVal && key === 'exports') markExported(v);
        if (isExportsTarget(target, fr)) markExported(v);
        return;
      }
      case 'ObjectPattern':
      case 'ArrayPattern':
        this.bindAssign(target, v, sc, fr);
        return;
      case 'AssignmentPattern':
        this.assignTo(target.left, v.t || v.c !== undefined ? v : join(v, this.ev(target.right, sc, fr)), sc, fr, node);
        return;
      case 'TSAsExpression':
      case 'TSNonNullExpression':
      case 'TSTypeAssertion':
      case 'TSSatisfiesExpression':
        this.assignTo(target.expression, v, sc, fr, node);
        return;
      default:
        return;
    }
  }

  bindAssign(pat, v, sc, fr) {
    if (pat.type === 'ObjectPattern') {
      for (const p of pat.properties) {
        if (p.type === 'RestElement') { this.assignTo(p.argument, v, sc, fr, p); continue; }
        const key = p.computed ? constKey(this.ev(p.key, sc, fr)) : (p.key.name !== undefined ? p.key.name : String(p.key.value));
        const x = key === null ? this.anyProp(v) : this.getProp(v, key, p.key, fr, null);
        this.assignTo(p.value, x, sc, fr, p);
      }
    } else {
      let i = 0;
      for (const el of pat.elements) {
        if (el) this.assignTo(el.type === 'RestElement' ? el.argument : el, el.type === 'RestElement' ? v : this.index(v, i, el, fr), sc, fr, el);
        i++;
      }
    }
  }

  // ---- expressions ----

  ev(node, sc, fr) {
    this.tick();
    switch (node.type) {
      case 'Literal':
        if (node.regex) return Val.of({ kind: 'regex', c: undefined, re: node.regex });
        return Val.konst(node.value);
      case 'Identifier':
        return this.evIdent(node, sc, fr);
      case 'TemplateLiteral': {
        let v = Val.konst(node.quasis[0].value.cooked || '');
        for (let i = 0; i < node.expressions.length; i++) {
          v = concat(v, flat(this.ev(node.expressions[i], sc, fr)));
          v = concat(v, Val.konst(node.quasis[i + 1].value.cooked || ''));
        }
        return v;
      }
      case 'TaggedTemplateExpression':
        return models.taggedTemplate(this, node, sc, fr);
      case 'MemberExpression':
        return this.evMember(node, sc, fr);
      case 'ChainExpression':
        return this.ev(node.expression, sc, fr);
      case 'CallExpression':
        return this.evCall(node, sc, fr, false);
      case 'NewExpression':
        return this.evCall(node, sc, fr, true);
      case 'ImportExpression': {
        const s = this.ev(node.source, sc, fr);
        models.dynamicImport(this, s, node, fr);
        return typeof s.c === 'string' ? this.require(s.c, fr, node) : new Val();
      }
      case 'AssignmentExpression':
        return this.evAssign(node, sc, fr);
      case 'BinaryExpression':
        return this.evBinary(node, sc, fr);
      case 'LogicalExpression': {
        const a = this.ev(node.left, sc, fr);
        const scB = node.operator === '&&' ? narrowed(sc, models.guards(this, node.left, true, sc, fr), fr)
          : node.operator === '||' ? narrowed(sc, models.guards(this, node.left, false, sc, fr), fr) : sc;
        fr.bdepth++;
        let b;
        try {
          b = this.ev(node.right, scB, fr);
        } finally {
          fr.bdepth--;
        }
        if (node.operator === '&&') return a.c !== undefined && !a.c ? a : b;
        return join(a, b);
      }
      case 'UnaryExpression': {
        const a = this.ev(node.argument, sc, fr);
        if (node.operator === 'delete' && node.argument.type === 'MemberExpression') return Val.konst(true);
        if (node.operator === 'typeof') return Val.of({ str: true });
        if (node.operator === 'void') return V.UNDEF();
        if (node.operator === '-' || node.operator === '+' || node.operator === '~') return Val.of({ r: a.r });
        return new Val();
      }
      case 'UpdateExpression':
        this.ev(node.argument, sc, fr);
        return new Val();
      case 'ConditionalExpression': {
        this.ev(node.test, sc, fr);
        fr.bdepth++;
        try {
          const a = this.ev(node.consequent, narrowed(sc, models.guards(this, node.test, true, sc, fr), fr), fr);
          const b = this.ev(node.alternate, narrowed(sc, models.guards(this, node.test, false, sc, fr), fr), fr);
          return join(a, b);
        } finally {
          fr.bdepth--;
        }
      }
      case 'ObjectExpression':
        return this.evObject(node, sc, fr);
      case 'ArrayExpression': {
        const v = Val.of({ kind: 'arr', props: new Map(), fresh: true });
        let i = 0, allConst = true;
        const consts = [];
        for (const el of node.elements) {
          if (!el) { i++; continue; }
          if (el.type === 'SpreadElement') {
            const x = this.ev(el.argument, sc, fr);
            v.elem = v.elem ? join(v.elem, this.elemOf(x, el, fr)) : this.elemOf(x, el, fr);
            allConst = false;
            continue;
          }
          const x = this.ev(el, sc, fr);
          v.props.set(String(i++), x);
          v.elem = v.elem ? join(v.elem, x) : x;
          if (x.c === undefined || x.t) allConst = false;
          else consts.push(x.c);
        }
        if (allConst) v.consts = consts;
        return v;
      }
      case 'FunctionExpression':
      case 'ArrowFunctionExpression':
        return this.closure(node, sc, fr);
      case 'ClassExpression':
        return this.classVal(node, sc, fr);
      case 'AwaitExpression':
      case 'YieldExpression':
        return node.argument ? this.ev(node.argument, sc, fr) : new Val();
      case 'SequenceExpression': {
        let v = null;
        for (const e of node.expressions) v = this.ev(e, sc, fr);
        return v;
      }
      case 'ThisExpression':
        return fr.self || new Val();
      case 'Super':
        return fr.superVal || new Val();
      case 'SpreadElement':
        return this.ev(node.argument, sc, fr);
      case 'MetaProperty':
        return new Val();
      case 'JSXElement':
      case 'JSXFragment':
        return models.jsx(this, node, sc, fr);
      case 'TSAsExpression':
      case 'TSNonNullExpression':
      case 'TSTypeAssertion':
      case 'TSSatisfiesExpression':
      case 'TSInstantiationExpression':
      case 'ParenthesizedExpression':
        return this.ev(node.expression, sc, fr);
      default:
        return this.evChildren(node, sc, fr);
    }
  }

  // evChildren evaluates what it can inside an unknown node (for the sinks
  // it may hold) and returns a value with their taint.
  evChildren(node, sc, fr) {
    let v = new Val();
    for (const k of Object.keys(node)) {
      if (k === 'parent' || k === 'loc' || k === 'range' || k === 'typeAnnotation' || k === 'returnType' || k === 'typeParameters') continue;
      const c = node[k];
      const list = Array.isArray(c) ? c : [c];
      for (const x of list) {
        if (x && typeof x.type === 'string' && x.loc && !/^TS|Statement$|Declaration$/.test(x.type)) {
          const r = this.ev(x, sc, fr);
          if (r.t) v = join(v, derived(r));
        }
      }
    }
    return v;
  }

  evIdent(node, sc, fr) {
    const name = node.name;
    const s = sc.find(name);
    let v;
    if (s) v = s.vars.get(name);
    else if (name === 'undefined') return V.UNDEF();
    else v = models.global(this, name, node, fr);
    const m = narrowMask(sc, name);
    if (m && v) v = sanitize(v, m);
    return v || new Val();
  }

  memberKey(node, sc, fr) {
    if (!node.computed) return node.property.type === 'PrivateIdentifier' ? '#' + node.property.name : node.property.name;
    const k = this.ev(node.property, sc, fr);
    return constKey(k);
  }

  evMember(node, sc, fr) {
    const obj = this.ev(node.object, sc, fr);
    let key;
    let keyVal = null;
    if (!node.computed) key = node.property.type === 'PrivateIdentifier' ? '#' + node.property.name : node.property.name;
    else {
      keyVal = this.ev(node.property, sc, fr);
      key = constKey(keyVal);
    }
    let v = key === null ? this.dynProp(obj, keyVal, node, fr) : (models.syntaxSource(this, obj, node, key, fr) || this.getProp(obj, key, node, fr, node.object));
    if (v.t && hasNarrow(sc)) {
      const k = exprKey(node) || exprKey(node, fr.mod.code);
      if (k) {
        const m = narrowMask(sc, k);
        if (m) v = sanitize(v, m);
      }
    }
    return v;
  }

  // getProp is obj[key] for a known key.
  getProp(obj, key, node, fr, objNode) {
    if (obj.props && obj.props.has(key)) return obj.props.get(key);
    const m = models.prop(this, obj, key, node, fr);
    if (m !== undefined) return m;
    if (obj.cls && obj.cls.statics && obj.cls.statics.has(key)) return obj.cls.statics.get(key);
    if (obj.proto) {
      const p = obj.proto.get(key);
      if (p) return p;
    }
    if (key === 'length') return Val.of({ r: obj.r });
    if (obj.t || obj.r) {
      const out = derived(obj, false);
      out.obj = false;
      if (obj.strFields) out.str = true;
      if (obj.srcVal && obj.t && obj.t.tr.src && !obj.t.tr.prev) {
        const tr = obj.t.tr;
        const st = new Step(clipText(tr.text + (/^[A-Za-z_$][\w$]*$/.test(key) ? '.' + key : `[${JSON.stringify(key)}]`)), tr.file, tr.line, tr.col, null);
        st.src = true;
        out.t = obj.t.with(st);
        out.srcVal = true;
        // $EDITOR, $PAGER and the like name the program the user wants run:
        // running it is their purpose, not a command injection.
        if (tr.text === 'process.env' && PROGRAM_ENV.test(key)) out.t = out.t.sanitized(V.BIT['command-injection']);
      }
      if (obj.elem && /^\d+$/.test(key)) return join(out, obj.elem);
      return out;
    }
    if (obj.elem && /^\d+$/.test(key)) return obj.elem;
    if (obj.kind === 'arr' || obj.kind === 'obj') return new Val();
    return new Val();
  }

  // dynProp is obj[k] for a key not known.
  dynProp(obj, k, node, fr) {
    if (obj.t) return derived(obj, false);
    if (obj.elem) return obj.elem;
    if (obj.props && obj.kind !== 'arr') {
      let v = null;
      for (const x of obj.props.values()) if (!x.fn) v = v ? join(v, x) : x;
      return v || new Val();
    }
    if (obj.props && obj.kind === 'arr') return this.anyProp(obj);
    return new Val();
  }

  anyProp(v) {
    if (v.t) return derived(v, false);
    if (v.elem) return v.elem;
    let out = new Val();
    if (v.props) for (const x of v.props.values()) out = join(out, x);
    return out;
  }

  index(v, i, node, fr) {
    if (v.props && v.props.has(String(i))) return v.props.get(String(i));
    return this.elemOf(v, node, fr);
  }

  // elemOf is the value of an element of v (for-of, spread).
  elemOf(v, node, fr) {
    if (v.elem) return v.elem;
    if (v.t) return derived(v, false);
    if (v.props && v.kind === 'arr') return this.anyProp(v);
    const m = models.elem(this, v, node, fr);
    return m || new Val();
  }

  evObject(node, sc, fr) {
    const v = Val.of({ props: new Map(), kind: 'obj', fresh: true });
    for (const p of node.properties) {
      if (p.type === 'SpreadElement') {
        const x = this.ev(p.argument, sc, fr);
        if (x.props) for (const [k, y] of x.props) v.props.set(k, y);
        if (x.t) v.spreadT = x; // the spread of a request object: any field
        continue;
      }
      let key;
      if (p.computed) {
        const kv = this.ev(p.key, sc, fr);
        key = constKey(kv);
        if (key === null) {
          const x = this.ev(p.value, sc, fr);
          v.elem = v.elem ? join(v.elem, x) : x;
          continue;
        }
      } else {
        key = p.key.type === 'Identifier' ? p.key.name : String(p.key.value);
      }
      let x;
      if (p.kind === 'get' || p.kind === 'set' || p.method) {
        x = this.closure(p.value, sc, fr);
        x.fn.name = key;
        x.fn.selfObj = v;
      } else {
        x = this.ev(p.value, sc, fr);
        if (x.fn && !x.fn.name) x.fn.name = key;
      }
      models.propertyCheck(this, key, x, p, fr);
      v.props.set(key, x);
    }
    if (v.spreadT) {
      // {...req.body}: fields not listed are the request's too.
      const t = v.spreadT;
      delete v.spreadT;
      const out = v;
      out.elem = derived(t, false);
      out.spread = t;
    }
    return v;
  }

  evBinary(node, sc, fr) {
    const a = this.ev(node.left, sc, fr);
    const b = this.ev(node.right, sc, fr);
    switch (node.operator) {
      case '+': {
        const numeric = (x) => typeof x.c === 'number' || (x.c === undefined && !x.str && !x.t && !x.props && !x.kind && x.r);
        if (numeric(a) && numeric(b)) return Val.of({ r: a.r || b.r, c: typeof a.c === 'number' && typeof b.c === 'number' ? a.c + b.c : undefined });
        return concat(flat(a), flat(b));
      }
      case '|':
        return Val.of({ r: a.r || b.r, noent: a.noent || b.noent });
      case '-': case '*': case '/': case '%': case '**': case '&': case '^': case '<<': case '>>': case '>>>':
        return Val.of({ r: a.r || b.r });
      default:
        return Val.of({});
    }
  }

  evAssign(node, sc, fr) {
    const op = node.operator;
    let v = this.ev(node.right, sc, fr);
    if (op !== '=') {
      const old = this.ev(node.left, sc, fr);
      if (op === '+=') v = concat(flat(old), flat(v));
      else if (op === '||=' || op === '??=' || op === '&&=') v = join(old, v);
      else v = Val.of({ r: old.r || v.r });
    }
    if (node.left.type === 'Identifier' && v.fn && !v.fn.name) v.fn.name = node.left.name;
    this.assignTo(node.left, v, sc, fr, node);
    return v;
  }

  // ---- calls ----

  evArgs(list, sc, fr) {
    const args = [];
    for (const a of list) {
      if (a.type === 'SpreadElement') {
        const x = this.ev(a.argument, sc, fr);
        if (x.props && x.kind === 'arr' && !x.elem) for (const y of x.props.values()) args.push(y);
        else args.push(this.elemOf(x, a, fr));
      } else {
        args.push(this.ev(a, sc, fr));
      }
    }
    return args;
  }

  evCall(node, sc, fr, isNew) {
    let callee = node.callee;
    while (callee.type === 'TSNonNullExpression' || callee.type === 'TSAsExpression' || callee.type === 'ChainExpression') callee = callee.expression;
    let recv = null, method = null, fnVal, recvNode = null;
    if (callee.type === 'MemberExpression') {
      recvNode = callee.object;
      recv = this.ev(callee.object, sc, fr);
      method = this.memberKey(callee, sc, fr);
      fnVal = method === null ? new Val() : this.getProp(recv, method, callee, fr, callee.object);
      if (fnVal.kind === null && !fnVal.fn && recv.kind && method !== null) fnVal = Val.of({ kind: null });
    } else {
      fnVal = this.ev(callee, sc, fr);
    }
    const args = this.evArgs(node.arguments, sc, fr);
    const call = { node, callee, recv, recvNode, method, fn: fnVal, args, isNew, sc, fr, argNodes: node.arguments };
    const out = this.evCall2(call, fnVal, recv, args, node, fr, isNew);
    // A call checked by a guard (list.includes(x.trim()) ? x.trim() : ...).
    if (out && out.t && hasNarrow(sc)) {
      const m = narrowMask(sc, exprKey(node, fr.mod.code));
      if (m) return sanitize(out, m);
    }
    return out;
  }

  evCall2(call, fnVal, recv, args, node, fr, isNew) {
    const m = models.call(this, call);
    if (m !== undefined) return m;
    if (fnVal.fn) {
      if (isNew) return this.construct(fnVal, args, node, fr);
      const ret = this.invoke(fnVal.fn, fnVal.fn.selfObj || (recv && !fnVal.fn.self ? recv : null), args, node, fr, {});
      return models.implied(this, fnVal.fn, ret, call.argNodes, fr);
    }
    if (fnVal.native) return fnVal.native(args, node, fr, recv);
    if (fnVal.kind === 'db') {
      // new Model({ name, email }): a document holding the fields it was given, each its own
      const a0 = args[0], n0 = call.argNodes && call.argNodes[0];
      if (isNew && args.length === 1 && a0 && a0.props && n0 && n0.type === 'ObjectExpression') {
        return Val.of({ kind: 'db', props: new Map(a0.props) });
      }
      return Val.of({ kind: 'db' });
    }
    return models.unknownCall(this, call);
  }

  // invoke walks a function with the given arguments and returns what it
  // returns. Recursion, depth and the per-file call budget end inlining: the
  // result is then the join of the arguments (an unknown function's).
  invoke(clo, self, args, callNode, callerFr, opts) {
    const node = clo.node;
    const depth = callerFr ? callerFr.depth + 1 : 0;
    this.analyzed.add(node);
    if (depth > MAX_DEPTH || this.stack.includes(node) || ++this.invokes > MAX_INVOKES) {
      return this.opaque(args);
    }
    const key = memoKey(node, self, args);
    if (key !== null && this.memo.has(key)) return this.memo.get(key);
    const mod = clo.mod;
    const fr = new Frame(mod, clo, node.type === 'ArrowFunctionExpression' ? clo.self : (self || new Val()), depth);
    if (node.type === 'ArrowFunctionExpression' && clo.superVal) fr.superVal = clo.superVal;
    if (clo.superVal) fr.superVal = clo.superVal;
    fr.args = args;
    fr.async = node.async;
    const sc = new Scope(clo.scope, true, 0);
    if (node.type !== 'ArrowFunctionExpression') sc.vars.set('arguments', Val.of({ kind: 'arr', elem: args.length ? args.reduce((a, b) => join(a, b)) : null }));
    if (node.id && node.type === 'FunctionExpression') sc.vars.set(node.id.name, Val.of({ fn: clo }));
    this.stack.push(node);
    try {
      node.params.forEach((p, i) => {
        let a = args[i];
        if (p.type === 'RestElement') a = Val.of({ kind: 'arr', elem: args.slice(i).reduce((x, y) => join(x, y), null) });
        this.bind(p, a || V.UNDEF(), sc, fr, 'let', true);
      });
      if (opts.entry) models.entryFrame(this, clo, fr, sc);
      if (node.body.type === 'BlockStatement') {
        if (hasDirective(node.body.body, 'use server')) clo.useServer = true;
        this.execBlock(node.body.body, sc, fr);
      } else {
        const v = this.ev(node.body, sc, fr);
        if (fr.hapi) models.hapiReturn(this, v, node.body, fr);
        fr.ret = v;
      }
    } finally {
      this.stack.pop();
    }
    const ret = fr.ret || V.UNDEF();
    if (key !== null) this.memo.set(key, ret);
    return ret;
  }

  // opaque is the result of a call not followed: it carries the arguments'
  // taint.
  opaque(args) {
    let t = null, r = null;
    for (const a of args) {
      t = V.joinTaint(t, deepTaint(a));
      r = r || V.deepRand(a);
    }
    return Val.of({ t, r, s: t ? TAINTED : null });
  }

  // construct is `new F(args)` for a function or class of the module.
  construct(fnVal, args, node, fr) {
    const obj = Val.of({ props: new Map(), kind: 'obj' });
    if (fnVal.cls) {
      this.initInstance(fnVal.cls, obj, args, node, fr);
      return obj;
    }
    const r = this.invoke(fnVal.fn, obj, args, node, fr, {});
    // A constructor may return another object, maybe only on some path
    // (if (!(this instanceof F)) return new F()): either may be the result.
    if (r && (r.props || r.fn) && r !== obj && r.c === undefined) return join(obj, r);
    return obj;
  }

  closure(node, sc, fr) {
    const clo = { node, scope: sc, mod: fr.mod, self: node.type === 'ArrowFunctionExpression' ? fr.self : null, name: node.id ? node.id.name : null };
    if (fr.superVal) clo.superVal = fr.superVal;
    if (fr.clo && fr.clo.useServer) clo.useServer = true;
    if (!node.__clo) node.__clo = clo;
    return Val.of({ fn: clo, kind: null });
  }

  // classVal is a class: its constructor and methods as closures.
  classVal(node, sc, fr) {
    const cls = { node, name: node.id ? node.id.name : null, methods: new Map(), statics: new Map(), ctor: null, fields: [], superCls: null, superVal: null, scope: sc, mod: fr.mod };
    const v = Val.of({ cls, kind: null });
    if (node.superClass) {
      const s = this.ev(node.superClass, sc, fr);
      cls.superVal = s;
      if (s.cls) cls.superCls = s.cls;
    }
    const inner = new Scope(sc, false, fr.bdepth);
    if (cls.name) inner.vars.set(cls.name, v);
    for (const m of node.body.body) {
      if (m.type === 'MethodDefinition' || m.type === 'TSAbstractMethodDefinition') {
        if (!m.value || !m.value.body) continue;
        const name = m.key.type === 'PrivateIdentifier' ? '#' + m.key.name : (m.key.name !== undefined ? m.key.name : String(m.key.value));
        const clo = { node: m.value, scope: inner, mod: fr.mod, self: null, name, cls };
        if (!m.value.__clo) m.value.__clo = clo;
        if (m.kind === 'constructor') cls.ctor = clo;
        else if (m.static) cls.statics.set(name, Val.of({ fn: clo }));
        else cls.methods.set(name, Val.of({ fn: clo }));
      } else if (m.type === 'PropertyDefinition' || m.type === 'ClassProperty') {
        if (m.static) {
          if (m.value && !m.computed) cls.statics.set(m.key.name, this.ev(m.value, inner, fr));
        } else {
          cls.fields.push(m);
        }
      } else if (m.type === 'StaticBlock') {
        this.exec(m, inner, fr);
      }
    }
    cls.inner = inner;
    return v;
  }

  methodsOf(cls, out) {
    if (cls.superCls) this.methodsOf(cls.superCls, out);
    for (const [k, x] of cls.methods) out.set(k, x);
    return out;
  }

  // initInstance runs field initializers and the constructor of cls on obj.
  initInstance(cls, obj, args, node, fr) {
    obj.proto = this.methodsOf(cls, new Map());
    obj.cls = cls;
    this.instanceFields(cls, obj, fr);
    if (cls.ctor) {
      const clo = { ...cls.ctor, superVal: this.superCtor(cls, obj, fr) };
      this.invoke(clo, obj, args, node, fr, {});
    } else if (cls.superCls) {
      this.initInstance(cls.superCls, obj, args, node, fr);
      obj.proto = this.methodsOf(cls, new Map());
      obj.cls = cls;
    } else if (cls.superVal && cls.superVal.kind) {
      models.superCall(this, cls.superVal, obj, args, node, fr);
    }
  }

  instanceFields(cls, obj, fr) {
    for (const f of cls.fields) {
      if (f.computed || !f.key) continue;
      const name = f.key.type === 'PrivateIdentifier' ? '#' + f.key.name : (f.key.name !== undefined ? f.key.name : String(f.key.value));
      if (!f.value) continue;
      const ffr = new Frame(cls.mod, null, obj, fr.depth + 1);
      try {
        obj.setProp(name, this.ev(f.value, cls.inner, ffr));
      } catch (e) {
        if (e instanceof Budget || e instanceof RangeError) throw e;
      }
    }
  }

  superCtor(cls, obj, fr) {
    const sv = Val.of({ kind: 'super' });
    sv.native = (args, node, cfr) => {
      if (cls.superCls) this.initInstance(cls.superCls, obj, args, node, cfr);
      else if (cls.superVal && cls.superVal.kind) models.superCall(this, cls.superVal, obj, args, node, cfr);
      obj.proto = this.methodsOf(cls, new Map());
      return V.UNDEF();
    };
    // super.method(...) resolves on the parent's methods.
    sv.props = cls.superCls ? this.methodsOf(cls.superCls, new Map()) : new Map();
    return sv;
  }

  // require returns the exports of a module specifier: a local file's, or a
  // model of a package.
  require(spec, fr, node) {
    if (typeof spec !== 'string') return new Val();
    const rel = this.resolve(fr.mod.path, spec);
    if (rel) {
      const m = this.modules.has(rel) ? this.modules.get(rel) : this.module(rel);
      if (m) return this.exportsOf(m);
      return new Val();
    }
    return models.packageVal(this, spec, fr);
  }

  execImport(st, sc, fr) {
    const m = this.require(st.source.value, fr, st);
    for (const s of st.specifiers) {
      let v;
      if (s.type === 'ImportDefaultSpecifier') {
        v = m.props && m.props.has('default') ? m.props.get('default') : (m.kind ? m : (m.props && m.props.has('default') ? m.props.get('default') : m));
        if (m.kind && m.kind.startsWith('m:')) v = m;
      } else if (s.type === 'ImportNamespaceSpecifier') {
        v = m;
      } else {
        const name = s.imported.name !== undefined ? s.imported.name : s.imported.value;
        v = this.getProp(m, name, s, fr, null);
      }
      sc.vars.set(s.local.name, v);
    }
  }

  execExportNamed(st, sc, fr) {
    const ex = this.exportsOf(fr.mod);
    if (st.declaration) {
      const d = st.declaration;
      this.exec(d, sc, fr);
      if (d.type === 'VariableDeclaration') {
        for (const dc of d.declarations) for (const n of patternNames(dc.id)) {
          const v = sc.vars.get(n);
          if (v) { ex.setProp(n, v); markExported(v); }
        }
      } else if (d.id) {
        const v = sc.vars.get(d.id.name);
        if (v) { ex.setProp(d.id.name, v); markExported(v); }
      }
      return;
    }
    const from = st.source ? this.require(st.source.value, fr, st) : null;
    for (const s of st.specifiers || []) {
      const local = s.local.name !== undefined ? s.local.name : s.local.value;
      const exported = s.exported.name !== undefined ? s.exported.name : s.exported.value;
      const v = from ? this.getProp(from, local, s, fr, null) : (sc.find(local) ? sc.find(local).vars.get(local) : new Val());
      markExported(v);
      ex.setProp(exported, v);
    }
  }

  // templateList lists the tree's template files (for res.render).
  templates() {
    if (!this.templateFiles) this.templateFiles = files.walk(this.root).filter(files.isTemplate);
    return this.templateFiles;
  }
}

// betterFinding: the more severe, then the shorter path, then the earlier
// source (so that the order of the walk does not show in the output).
function betterFinding(a, b) {
  if (rank(a.level) !== rank(b.level)) return rank(a.level) > rank(b.level);
  const ta = a.trace, tb = b.trace;
  if (ta.n !== tb.n) return ta.n < tb.n;
  return V.better(ta, tb) === ta && ta !== tb && key(ta) < key(tb);
}

function key(tr) {
  const s = tr.source();
  return `${s.file}\u0000${String(s.line).padStart(8, '0')}\u0000${String(s.col).padStart(6, '0')}\u0000${s.text}`;
}

function rank(level) { return level === 'error' ? 3 : level === 'warning' ? 2 : 1; }

function clipText(s) {
  s = String(s);
  return s.length > 80 ? s.slice(0, 77) + '...' : s;
}

function oneLine(s) { return clipText(String(s).replace(/\s+/g, ' ')); }

function constKey(v) {
  if (v.t) return null;
  if (typeof v.c === 'string' || typeof v.c === 'number') return String(v.c);
  return null;
}

function isConstNode(n) { return n.type === 'Literal' || (n.type === 'TemplateLiteral' && n.expressions.length === 0); }

function hasDirective(body, d) {
  for (const st of body || []) {
    if (st.type !== 'ExpressionStatement' || st.expression.type !== 'Literal' || typeof st.expression.value !== 'string') return false;
    if (st.expression.value === d) return true;
  }
  return false;
}

function patternNames(p, out = []) {
  if (!p) return out;
  switch (p.type) {
    case 'Identifier': out.push(p.name); break;
    case 'ObjectPattern': for (const x of p.properties) patternNames(x.type === 'RestElement' ? x.argument : x.value, out); break;
    case 'ArrayPattern': for (const x of p.elements) patternNames(x, out); break;
    case 'AssignmentPattern': patternNames(p.left, out); break;
    case 'RestElement': patternNames(p.argument, out); break;
  }
  return out;
}

function markExported(v) {
  if (v && v.fn) v.fn.exported = true;
  if (v && v.props) for (const x of v.props.values()) if (x && x.fn) x.fn.exported = true;
}

function isExportsTarget(t, fr) {
  // exports.f = ..., module.exports.f = ...
  const o = t.object;
  if (o.type === 'Identifier' && o.name === 'exports') return true;
  return o.type === 'MemberExpression' && !o.computed && o.object.type === 'Identifier' && o.object.name === 'module' && o.property.name === 'exports';
}

// collectFunctions lists a program's functions in source order (parents
// before the functions they hold).
function collectFunctions(node, out) {
  const stack = [node];
  while (stack.length) {
    const n = stack.pop();
    if (!n || typeof n.type !== 'string') continue;
    if (n.type === 'FunctionDeclaration' || n.type === 'FunctionExpression' || n.type === 'ArrowFunctionExpression') out.push(n);
    const kids = [];
    for (const k of Object.keys(n)) {
      if (k === 'parent' || k === 'loc' || k === 'range' || k === '__clo') continue;
      const c = n[k];
      if (Array.isArray(c)) { for (const x of c) if (x && typeof x.type === 'string') kids.push(x); }
      else if (c && typeof c.type === 'string') kids.push(c);
    }
    for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
  }
  return out;
}

// memoKey is the key under which a call's result is kept: the function,
// when neither its arguments nor its this carry taint, a model object or a
// function (a callback may be given input). Such a call is walked once per
// file: walking it again could only find what its first walk found, and
// class-heavy code calling its methods from each other would otherwise be
// walked exponentially often.
function memoKey(node, self, args) {
  for (const a of args) if (a && (a.fn || a.kind || a.native || deepTaint(a) || V.deepRand(a))) return null;
  if (self && (self.kind || self.t || self.r || (self.props && (deepTaint(self) || V.deepRand(self))))) return null;
  return node;
}

// exits reports whether a statement always leaves the code after it
// (return, throw, break, continue).
function exits(st) {
  if (!st) return false;
  switch (st.type) {
    case 'ReturnStatement': case 'ThrowStatement': case 'BreakStatement': case 'ContinueStatement': return true;
    case 'BlockStatement': return st.body.some(exits);
    case 'IfStatement': return !!st.alternate && exits(st.consequent) && exits(st.alternate);
    case 'ExpressionStatement': {
      const e = st.expression;
      return e.type === 'CallExpression' && e.callee.type === 'MemberExpression' && !e.callee.computed &&
        e.callee.object.type === 'Identifier' && e.callee.object.name === 'process' && e.callee.property.name === 'exit';
    }
    default: return false;
  }
}

// exprKey names an identifier or a static member chain (a.b.c), the keys
// guards narrow.
function exprKey(n, code) {
  if (code !== undefined && n.range && (n.type === 'CallExpression' || (n.type === 'MemberExpression' && exprKey(n) === null))) {
    return '#' + code.slice(n.range[0], n.range[1]).replace(/\s+/g, '');
  }
  if (n.type === 'Identifier') return n.name;
  if (n.type === 'ThisExpression') return 'this';
  if (n.type === 'MemberExpression') {
    const o = exprKey(n.object);
    if (!o) return null;
    if (!n.computed && n.property.type === 'Identifier') return o + '.' + n.property.name;
    if (n.computed && n.property.type === 'Literal') return o + '.' + String(n.property.value);
    return null;
  }
  if (n.type === 'ChainExpression' || n.type === 'TSAsExpression' || n.type === 'TSNonNullExpression') return exprKey(n.expression);
  return null;
}

function narrowed(sc, list, fr) {
  if (!list || list.length === 0) return sc;
  const inner = new Scope(sc, false, fr.bdepth);
  addNarrow(inner, list);
  return inner;
}

function addNarrow(sc, list) {
  if (!list || list.length === 0) return;
  if (!sc.narrow) sc.narrow = new Map();
  for (const { key, mask } of list) sc.narrow.set(key, (sc.narrow.get(key) || 0) | mask);
}

function hasNarrow(sc) {
  for (let s = sc; s; s = s.parent) if (s.narrow && s.narrow.size) return true;
  return false;
}

function narrowMask(sc, key) {
  let m = 0;
  for (let s = sc; s; s = s.parent) {
    if (s.narrow && s.narrow.has(key)) m |= s.narrow.get(key);
    if (s.vars.has(key) && !s.narrow) break;
  }
  return m;
}

function clearNarrow(sc, name) {
  for (let s = sc; s; s = s.parent) {
    if (s.narrow) {
      for (const k of [...s.narrow.keys()]) if (k === name || k.startsWith(name + '.')) s.narrow.delete(k);
    }
    if (s.vars.has(name)) break;
  }
}

function init(m) { models = m; }

module.exports = { Analyzer, Scope, Frame, Budget, init, exprKey, exits, clipText, collectFunctions, hasDirective, constKey, cpuMs };
