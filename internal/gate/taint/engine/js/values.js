'use strict';
// Abstract values of the taint interpreter: what the engine knows about one
// JavaScript value (its taint and the path that brought it, a constant, the
// fields of an object, a function it may be, the model object it stands for).

// Categories a sanitizer can clear, one bit each.
const CATS = [
  'sql-injection', 'nosql-injection', 'command-injection', 'code-injection', 'path-traversal',
  'open-redirect', 'xss', 'template-injection', 'xxe', 'insecure-deserialization', 'ssrf',
  'trust-boundary', 'insecure-cookie', 'jwt-unverified', 'weak-randomness', 'ldap-injection',
  'xpath-injection',
];
const BIT = Object.fromEntries(CATS.map((c, i) => [c, 1 << i]));
const ALL = (1 << CATS.length) - 1;

// Markers in a string value's approximate text (Val.s): a tainted part and an
// unknown, untainted part.
const TAINTED = '\u0001';
const UNKNOWN = '\u0002';
const MAX_TEXT = 400;
// A trace keeps at most this many steps; the middle of a longer one is dropped.
const MAX_STEPS = 16;

// Step is one place on a taint path: a source, a variable or parameter the
// value was bound to, a call it went through, or the sink.
class Step {
  constructor(text, file, line, col, prev) {
    this.text = text;
    this.file = file;
    this.line = line;
    this.col = col;
    this.prev = prev || null;
    this.n = prev ? prev.n + 1 : 1;
  }
  // list returns the steps from the source to this one.
  list() {
    const out = [];
    for (let s = this; s; s = s.prev) out.push(s);
    out.reverse();
    if (out.length <= MAX_STEPS) return out;
    const head = Math.floor((MAX_STEPS - 1) / 2);
    return out.slice(0, head).concat(out.slice(out.length - (MAX_STEPS - head)));
  }
  source() {
    let s = this;
    while (s.prev) s = s.prev;
    return s;
  }
}

// Taint is how a value came from a source: the trace, the categories for which
// it was sanitized (mask), and whether the source is remote (a request) or
// local (argv, the environment, a terminal).
class Taint {
  constructor(tr, m, local) {
    this.tr = tr;
    this.m = m || 0;
    this.local = !!local;
  }
  with(tr) { return new Taint(tr, this.m, this.local); }
  sanitized(mask) { return new Taint(this.tr, this.m | mask, this.local); }
  // live reports whether the taint still matters for category cat.
  live(cat) { return (this.m & BIT[cat]) === 0; }
}

function better(a, b) {
  // The shorter trace wins; then the earlier source, so that output does not
  // depend on which branch was seen first.
  if (a.n !== b.n) return a.n < b.n ? a : b;
  const sa = a.source(), sb = b.source();
  if (sa.file !== sb.file) return sa.file < sb.file ? a : b;
  if (sa.line !== sb.line) return sa.line < sb.line ? a : b;
  if (sa.col !== sb.col) return sa.col < sb.col ? a : b;
  return a;
}

function joinTaint(a, b) {
  if (!a) return b;
  if (!b || a === b) return a;
  const tr = better(a.tr, b.tr);
  return new Taint(tr, a.m & b.m, a.local && b.local);
}

let nextId = 1;

// Val is one abstract value. Fields are set only where known:
//   t     Taint from a request or other source
//   r     Step: the value derives from a weak random source (Math.random)
//   c     a constant (string, number, boolean, null); undefined when unknown
//   s     approximate text of a string (TAINTED/UNKNOWN mark the unknown parts)
//   str   the value is certainly a string (so no object can be injected)
//   props Map of known fields (objects, and arrays by index)
//   elem  the value of an array's (or unknown field's) elements
//   fn    a closure {node, scope, mod, self, cls} the value may be
//   kind  what a model says the value is ('req', 'res', 'm:child_process', ...)
//   obj   a request's whole container (req.body itself): JSON when sent
class Val {
  constructor() {
    this.id = nextId++;
    this.t = null;
    this.r = null;
    this.c = undefined;
    this.s = null;
    this.str = false;
    this.props = null;
    this.elem = null;
    this.fn = null;
    this.kind = null;
    this.obj = false;
  }
  static of(fields) {
    const v = new Val();
    Object.assign(v, fields);
    return v;
  }
  static konst(c) {
    const v = new Val();
    v.c = c;
    if (typeof c === 'string') {
      v.s = c.length > MAX_TEXT ? c.slice(0, MAX_TEXT) : c;
      v.str = true;
    }
    return v;
  }
  tainted() { return this.t !== null; }
  live(cat) { return this.t !== null && this.t.live(cat); }
  prop(name) { return this.props ? this.props.get(name) : undefined; }
  setProp(name, v) {
    if (!this.props) this.props = new Map();
    this.props.set(name, v);
  }
  // copy returns a shallow copy with a new identity (fields shared).
  copy() {
    const v = new Val();
    for (const k of Object.keys(this)) if (k !== 'id' && k !== 'srcVal' && k !== 'undef') v[k] = this[k];
    return v;
  }
}

// UNDEF is the undefined value (a variable declared but not yet set): it
// carries nothing, so a join with it is the other value.
const UNDEF = () => Val.of({ undef: true });

// join is the value that may be a or b.
function join(a, b) {
  if (!a || a.undef) return b || a;
  if (!b || a === b || b.undef) return a;
  const v = new Val();
  v.t = joinTaint(a.t, b.t);
  v.r = a.r && b.r ? better(a.r, b.r) : (a.r || b.r);
  v.c = a.c === b.c ? a.c : undefined;
  v.s = a.s === b.s ? a.s : (a.t || b.t ? joinText(a, b) : null);
  v.str = a.str && b.str;
  if (a.props || b.props) {
    v.props = new Map(a.props || []);
    if (b.props) for (const [k, x] of b.props) v.props.set(k, v.props.has(k) ? join(v.props.get(k), x) : x);
  }
  v.elem = a.elem && b.elem ? join(a.elem, b.elem) : (a.elem || b.elem);
  v.fn = a.fn || b.fn;
  v.kind = a.kind === b.kind ? a.kind : (a.kind || b.kind);
  v.obj = a.obj || b.obj;
  return v;
}

// joinText keeps, of two possible texts, the one whose taint comes earliest:
// a sink judging where the input lands (an URL's host) sees the worse case.
function joinText(a, b) {
  const pa = prefixOf(a), pb = prefixOf(b);
  if (pa === null) return a.s;
  if (pb === null) return b.s;
  return pa.length <= pb.length ? a.s : b.s;
}

// text is a value's approximate text for string building.
function text(v) {
  if (v.s !== null) return v.s;
  if (v.c !== undefined && v.c !== null && typeof v.c !== 'object') return clip(String(v.c));
  return v.t ? TAINTED : UNKNOWN;
}

function clip(s) { return s.length > MAX_TEXT ? s.slice(0, MAX_TEXT) : s; }

// prefixOf returns the constant text before the first tainted part of a
// string value, or null when it is not tainted or an unknown part comes first.
function prefixOf(v) {
  if (!v.t) return null;
  const s = text(v);
  const i = s.indexOf(TAINTED);
  if (i < 0) return s.indexOf(UNKNOWN) < 0 ? '' : null;
  const p = s.slice(0, i);
  return p.indexOf(UNKNOWN) >= 0 ? null : p;
}

// concat is a + b as strings.
function concat(a, b) {
  const v = new Val();
  v.t = joinTaint(a.t, b.t);
  v.r = a.r || b.r;
  if (a.c !== undefined && b.c !== undefined && !a.t && !b.t && a.c !== null && b.c !== null &&
      typeof a.c !== 'object' && typeof b.c !== 'object') {
    v.c = String(a.c) + String(b.c);
  }
  v.s = clip(text(a) + text(b));
  v.str = true;
  return v;
}

// sanitize returns v with its taint cleared for the categories in mask.
function sanitize(v, mask) {
  if (!v.t && !v.props && !v.elem) return v;
  const out = v.copy();
  if (v.t) {
    out.t = v.t.sanitized(mask);
    if ((out.t.m & ALL) === ALL) out.t = null;
  }
  return out;
}

// derived is a new value carrying v's taint (a string method's result).
function derived(v, str) {
  const out = new Val();
  out.t = v.t;
  out.r = v.r;
  out.str = !!str;
  if (v.t) out.s = TAINTED;
  return out;
}

// deepTaint is the taint of v or of anything it holds (objects, arrays).
function deepTaint(v, seen) {
  if (!v) return null;
  let t = v.t;
  if (!v.props && !v.elem) return t;
  seen = seen || new Set();
  if (seen.has(v) || seen.size > 200) return t;
  seen.add(v);
  if (v.props) for (const x of v.props.values()) t = joinTaint(t, deepTaint(x, seen));
  if (v.elem) t = joinTaint(t, deepTaint(v.elem, seen));
  return t;
}

function deepRand(v, seen) {
  if (!v) return null;
  if (v.r || (!v.props && !v.elem)) return v.r;
  seen = seen || new Set();
  if (seen.has(v) || seen.size > 200) return null;
  seen.add(v);
  if (v.props) for (const x of v.props.values()) { const r = deepRand(x, seen); if (r) return r; }
  return deepRand(v.elem, seen);
}

// flat is v with the taint of everything it holds on itself: what an unknown
// function given v may return.
function flat(v) {
  const t = deepTaint(v);
  const r = deepRand(v);
  if (t === v.t && r === v.r) return v;
  const out = v.copy();
  out.t = t;
  out.r = r;
  return out;
}

module.exports = {
  CATS, BIT, ALL, TAINTED, UNKNOWN, MAX_STEPS, Step, Taint, Val, UNDEF, join, joinTaint, better,
  text, prefixOf, concat, sanitize, derived, deepTaint, deepRand, flat, clip,
};
