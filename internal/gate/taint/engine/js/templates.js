'use strict';
// Templates are code: an EJS template is compiled to JavaScript (scriptlets
// as they are, <%= %> as escaped output, <%- %> as a raw-output sink) and run
// by the interpreter with the data res.render gave it; a Handlebars template
// is read mustache by mustache, following its block contexts, and its raw
// output ({{{ }}} and {{& }}) of request data is a sink.

const path = require('path');
const V = require('./values');
const { Val, derived, join } = V;
const S = require('./sinks');
const { parseScript } = require('./parse');
const { Scope, Frame, Budget } = require('./analyze');

const MAX_DEPTH = 4;
const compiled = new Map(); // code → {ast, code, raws} | null

function pos(src, i, lineStarts) {
  let lo = 0, hi = lineStarts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (lineStarts[mid] <= i) lo = mid; else hi = mid - 1;
  }
  return { line: lo + 1, column: i - lineStarts[lo] };
}

function lineStartsOf(src) {
  const out = [0];
  for (let i = 0; i < src.length; i++) if (src.charCodeAt(i) === 10) out.push(i + 1);
  return out;
}

function newlines(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) === 10) n++;
  return '\n'.repeat(n);
}

// compileEjs turns an EJS template into JavaScript with the same line
// numbers; raws lists the <%- %> tags with their places.
function compileEjs(src) {
  if (compiled.has(src)) return compiled.get(src);
  const ls = lineStartsOf(src);
  let out = '';
  const raws = [];
  let i = 0;
  while (i < src.length) {
    const j = src.indexOf('<%', i);
    if (j < 0) { out += newlines(src.slice(i)); break; }
    out += newlines(src.slice(i, j));
    if (src[j + 2] === '%') { i = j + 3; continue; }
    let k = j + 2;
    let mode = 'code';
    const ch = src[k];
    if (ch === '=') { mode = 'esc'; k++; } else if (ch === '-') { mode = 'raw'; k++; } else if (ch === '#') { mode = 'comment'; k++; } else if (ch === '_') { k++; }
    let e = src.indexOf('%>', k);
    if (e < 0) e = src.length;
    let body = src.slice(k, e);
    if (body.endsWith('-') || body.endsWith('_')) body = body.slice(0, -1);
    const p = pos(src, j, ls);
    // EJS 1's include directive: <% include ../common/head %>.
    const inc = mode === 'code' ? /^\s*include\s+([\w./@-]+)\s*$/.exec(body) : null;
    if (inc) out += `include(${JSON.stringify(inc[1])});` + newlines(body);
    else if (mode === 'code') out += body + ';';
    else if (mode === 'esc') out += `__aster_esc((${body}));`;
    else if (mode === 'raw') {
      const endp = pos(src, Math.min(e + 2, src.length), ls);
      raws.push({ line: p.line, column: p.column, endLine: endp.line, endColumn: endp.column, text: V.clip(src.slice(j, Math.min(e + 2, src.length))).slice(0, 60) });
      out += `__aster_raw(${raws.length - 1}, (${body}));`;
    } else out += newlines(body);
    i = e + 2;
  }
  let res = null;
  try {
    res = { ast: parseScript(out), code: out, raws };
  } catch (err) {
    res = null;
  }
  if (compiled.size > 500) compiled.clear();
  compiled.set(src, res);
  return res;
}

// findTemplate finds a view's file: name with an extension as is, else with
// each template extension; under a views directory first, then the shortest.
function findTemplate(A, name, from) {
  const list = A.templates();
  const ext = path.extname(name);
  const names = ext ? [name] : ['.ejs', '.hbs', '.handlebars', '.html', '.htm'].map((e) => name + e);
  const cands = [];
  for (const f of list) {
    for (const n of names) {
      const clean = n.replace(/^\.?\//, '');
      if (f === clean || f.endsWith('/' + clean)) cands.push(f);
    }
  }
  if (cands.length === 0) return null;
  cands.sort((a, b) => {
    const va = /(^|\/)(views|templates|partials)\//.test(a) ? 0 : 1, vb = /(^|\/)(views|templates|partials)\//.test(b) ? 0 : 1;
    if (va !== vb) return va - vb;
    // Nearest to the file that renders it.
    const da = commonPrefix(a, from), db = commonPrefix(b, from);
    if (da !== db) return db - da;
    if (a.length !== b.length) return a.length - b.length;
    return a < b ? -1 : 1;
  });
  return cands[0];
}

function commonPrefix(a, b) {
  const pa = a.split('/'), pb = b.split('/');
  let n = 0;
  while (n < pa.length - 1 && n < pb.length - 1 && pa[n] === pb[n]) n++;
  return n;
}

// render follows res.render(view, data) into the view's template.
function render(A, c, view, data) {
  const rel = findTemplate(A, view, c.fr.mod.path);
  if (!rel) return;
  const what = A.src(c.callee, c.fr);
  // Each field reaches the template through the render call: one more step.
  const locals = withStep(A, data, what, c.node, c.fr);
  renderFile(A, rel, locals, c.fr, 0);
}

// withStep copies the data given a template with one more step on every
// tainted value it holds (a few levels down: arrays of objects).
function withStep(A, data, what, node, fr, depth = 0, seen = new Map()) {
  if (!data || depth > 3) return data;
  if (seen.has(data)) return seen.get(data);
  if (seen.size > 500) return data;
  let out = data.t || data.r ? A.step(data, what, node, fr) : data;
  seen.set(data, out);
  if (data.props || data.elem || data.spread) {
    if (out === data) {
      out = data.copy();
      seen.set(data, out);
    }
    if (data.props) {
      out.props = new Map();
      for (const [k, v] of data.props) out.props.set(k, v.fn ? v : withStep(A, v, what, node, fr, depth + 1, seen));
    }
    if (data.spread) out.spread = withStep(A, data.spread, what, node, fr, depth + 1, seen);
    if (data.elem) out.elem = withStep(A, data.elem, what, node, fr, depth + 1, seen);
  }
  return out;
}

function renderFile(A, rel, locals, fr, depth) {
  if (depth > MAX_DEPTH) return;
  const code = A.readRel(rel);
  if (code === null) return;
  const ext = path.extname(rel).toLowerCase();
  if (ext === '.hbs' || ext === '.handlebars' || (!code.includes('<%') && /\{\{\{|\{\{&/.test(code))) {
    hbs(A, rel, code, locals, fr, depth, null);
  } else if (code.includes('<%')) {
    ejs(A, rel, code, locals, fr, depth, null);
  }
}

// ejs runs a compiled EJS template. at, when set, is where findings go (a
// template written in a JavaScript string).
function ejs(A, rel, code, locals, callerFr, depth, at) {
  const comp = compileEjs(code);
  if (!comp) return;
  const mod = { path: at ? callerFr.mod.path : rel, code: comp.code, ast: comp.ast, kind: 'ejs', entries: true, useServer: false };
  mod.freeVal = locals.spread || (locals.elem && locals.kind !== 'arr' ? locals.elem : null);
  mod.moduleVal = Val.of({ props: new Map([['exports', new Val()]]) });
  const sc = new Scope(null, true, 0);
  mod.scope = sc;
  if (locals.props) for (const [k, v] of locals.props) sc.vars.set(k, v);
  sc.vars.set('locals', locals);
  sc.vars.set('__aster_esc', Val.of({ native: () => new Val() }));
  sc.vars.set('__aster_raw', Val.of({
    native: (args, node, fr) => {
      const r = comp.raws[args[0] ? args[0].c : -1];
      const v = args[1];
      if (!r || !v || !S.xssValue(v)) return new Val();
      if (at) {
        S.sink(A, 'xss', at.node, at.fr, v, `${r.text} (unescaped EJS output)`);
      } else {
        S.sink(A, 'xss', node, fr, v, `${r.text} (unescaped EJS output)`, {
          file: rel, loc: { start: { line: r.line, column: r.column }, end: { line: r.endLine, column: r.endColumn } },
        });
      }
      return new Val();
    },
  }));
  sc.vars.set('include', Val.of({
    native: (args, node, fr) => {
      const name = args[0] && typeof args[0].c === 'string' ? args[0].c : null;
      if (!name || at) return new Val();
      let target = path.posix.normalize(path.posix.join(path.posix.dirname(rel), name));
      if (!path.extname(target)) target += '.ejs';
      if (target.startsWith('..')) return new Val();
      const data = Val.of({ props: new Map(locals.props || []), kind: 'obj', spread: locals.spread });
      if (args[1] && args[1].props) for (const [k, v] of args[1].props) data.props.set(k, v);
      renderFile(A, target, data, fr, depth + 1);
      return new Val();
    },
  }));
  const fr = new Frame(mod, null, new Val(), (callerFr ? callerFr.depth : 0) + 1);
  A.hoist(comp.ast.body, sc, fr);
  for (const st of comp.ast.body) {
    try {
      A.exec(st, sc, fr);
    } catch (e) {
      if (e instanceof Budget || e instanceof RangeError) throw e;
      if (process.env.ASTER_TAINT_DEBUG) throw e;
    }
  }
}

// hbs reads a Handlebars template's mustaches in order.
function hbs(A, rel, code, locals, callerFr, depth, at) {
  const ls = lineStartsOf(code);
  const stack = [{ v: locals, alias: null }];
  let i = 0;
  while (i < code.length) {
    const j = code.indexOf('{{', i);
    if (j < 0) break;
    A.tick();
    let triple = code[j + 2] === '{';
    const close = triple ? '}}}' : '}}';
    let k = j + (triple ? 3 : 2);
    // {{!-- comments --}} may hold mustaches.
    if (code.startsWith('!--', k) || code.startsWith('~!--', k)) {
      const e = code.indexOf('--}}', k);
      i = e < 0 ? code.length : e + 4;
      continue;
    }
    const e = code.indexOf(close, k);
    if (e < 0) break;
    let body = code.slice(k, e).trim();
    i = e + close.length;
    body = body.replace(/^~/, '').replace(/~$/, '').trim();
    if (!body || body[0] === '!') continue;
    let raw = triple;
    if (body[0] === '&') { raw = true; body = body.slice(1).trim(); }
    const first = body[0];
    if (first === '#' || first === '^') {
      const m = /^[#^]\*?\s*([\w.-]+)\s*([\s\S]*)$/.exec(body);
      if (!m) { stack.push({ v: top(stack).v, alias: null }); continue; }
      const helper = m[1];
      let rest = m[2].trim();
      let alias = null;
      const bp = /\bas\s+\|\s*([\w]+)(?:\s+([\w]+))?\s*\|\s*$/.exec(rest);
      if (bp) { rest = rest.slice(0, bp.index).trim(); alias = bp[1]; }
      const arg = rest.split(/\s+/)[0] || '';
      if (helper === 'each') {
        const el = elemOf(resolve(A, arg, stack));
        stack.push({ v: alias ? top(stack).v : el, alias: alias ? { [alias]: el } : null });
      } else if (helper === 'with') {
        const v = resolve(A, arg, stack);
        stack.push({ v: alias ? top(stack).v : v, alias: alias ? { [alias]: v } : null });
      } else {
        stack.push({ v: top(stack).v, alias: null });
      }
      continue;
    }
    if (first === '/') {
      if (stack.length > 1) stack.pop();
      continue;
    }
    if (first === '>') {
      const name = body.slice(1).trim().split(/\s+/)[0].replace(/^['"]|['"]$/g, '');
      if (name && !at && depth < MAX_DEPTH) {
        const target = findTemplate(A, name, rel);
        const ptxt = target ? A.readRel(target) : null;
        if (ptxt !== null && ptxt !== undefined) hbs(A, target, ptxt, top(stack).v, callerFr, depth + 1, null);
      }
      continue;
    }
    if (/^else\b/.test(body) || first === '*') continue;
    if (!raw) continue;
    // Raw output: a path, or a helper with its arguments.
    const toks = body.match(/"[^"]*"|'[^']*'|\S+/g) || [];
    const args = toks.length === 1 ? toks : toks.slice(1);
    for (const tk of args) {
      if (/^["']/.test(tk) || /^-?\d/.test(tk) || tk === 'true' || tk === 'false' || tk === 'null') continue;
      const p = tk.includes('=') ? tk.slice(tk.indexOf('=') + 1) : tk;
      const v = resolve(A, p, stack);
      if (!S.xssValue(v)) continue;
      const text = (triple ? '{{{' : '{{&') + body + (triple ? '}}}' : '}}');
      const what = `${V.clip(text).slice(0, 60)} (unescaped Handlebars output)`;
      if (at) {
        S.sink(A, 'xss', at.node, at.fr, v, what);
      } else {
        const s = pos(code, j, ls), en = pos(code, i, ls);
        S.sink(A, 'xss', null, callerFr, v, what, { file: rel, loc: { start: s, end: en } });
      }
      break;
    }
  }
}

function top(stack) { return stack[stack.length - 1]; }

function elemOf(v) {
  if (!v) return new Val();
  if (v.elem) return v.elem;
  if (v.t) return derived(v, false);
  if (v.props && v.kind === 'arr') {
    let out = null;
    for (const x of v.props.values()) out = out ? join(out, x) : x;
    return out || new Val();
  }
  return new Val();
}

function field(v, seg) {
  if (!v) return new Val();
  if (v.props && v.props.has(seg)) return v.props.get(seg);
  if (v.t) return derived(v, false);
  if (v.spread) return derived(v.spread, false);
  if (v.elem && (/^\d+$/.test(seg) || v.kind !== 'arr')) return v.elem;
  return new Val();
}

function resolve(A, p, stack) {
  if (!p) return new Val();
  let depth = stack.length - 1;
  while (p.startsWith('../')) { p = p.slice(3); depth = Math.max(0, depth - 1); }
  if (p.startsWith('@root')) { p = p.slice(5).replace(/^[./]/, ''); depth = 0; if (!p) return stack[0].v; }
  if (p.startsWith('@')) return new Val();
  let v = stack[depth].v;
  if (p === 'this' || p === '.') return v;
  p = p.replace(/^(this\.|\.\/|this\/)/, '');
  const segs = p.split(/[./]/).filter(Boolean).map((s) => s.replace(/^\[|\]$/g, ''));
  if (segs.length === 0) return v;
  // Block parameters (as |item|) shadow the context's fields.
  for (let d = depth; d >= 0; d--) {
    const al = stack[d].alias;
    if (al && Object.prototype.hasOwnProperty.call(al, segs[0])) {
      v = al[segs[0]];
      for (const s of segs.slice(1)) v = field(v, s);
      return v;
    }
  }
  for (const s of segs) v = field(v, s);
  return v;
}

// fromString handles a template given as a string (ejs.render(text, data),
// Handlebars.compile(text)): a constant template is followed with its data.
function fromString(A, c, p, a0) {
  if (typeof a0.c !== 'string') return new Val();
  const text = a0.c;
  const engine = p.split('.')[0];
  const at = { node: c.node, fr: c.fr };
  if (engine === 'ejs' && p.endsWith('.render')) {
    const data = c.args[1];
    if (data && (data.props || data.t)) ejs(A, c.fr.mod.path, text, asLocals(data), c.fr, 0, at);
    return Val.of({ str: true });
  }
  if (engine !== 'ejs' && engine !== 'handlebars' && engine !== 'hbs') {
    // Other engines escape by default: the rendered page holds no raw input.
    return Val.of({ kind: 'tplfn', native: () => Val.of({ str: true }) });
  }
  {
    return Val.of({
      kind: 'tplfn',
      native: (args, node, fr) => {
        const data = args[0];
        if (!data || !(data.props || data.t)) return Val.of({ str: true });
        const where = { node, fr };
        if (engine === 'ejs') ejs(A, fr.mod.path, text, asLocals(data), fr, 0, where);
        else hbs(A, fr.mod.path, text, asLocals(data), fr, 0, where);
        return Val.of({ str: true });
      },
    });
  }
  return new Val();
}

function asLocals(data) {
  if (data.props) return data;
  return Val.of({ props: new Map(), kind: 'obj', spread: data });
}

module.exports = { render, compileEjs, fromString, findTemplate, renderFile };
