'use strict';
// Sink checks: each reports a finding when a value that is still tainted for
// its category reaches it, with the value's path. Configuration-style checks
// (cookie flags, JWT options, XML parser options) need no source.

const V = require('./values');
const { Val, BIT, prefixOf, text, deepTaint, TAINTED, UNKNOWN } = V;

// Categories a local source (argv, the environment, a terminal) counts for:
// the person running a program chooses its files and URLs, not its code.
const LOCAL_OK = new Set(['sql-injection', 'nosql-injection', 'command-injection', 'code-injection']);

const NAMES = {
  'sql-injection': 'SQL injection', 'nosql-injection': 'NoSQL injection', 'command-injection': 'command injection',
  'code-injection': 'code injection', 'path-traversal': 'path traversal', 'open-redirect': 'open redirect',
  'xss': 'cross-site scripting', 'template-injection': 'template injection', 'xxe': 'XML external entities',
  'insecure-deserialization': 'insecure deserialization', 'ssrf': 'server-side request forgery',
  'trust-boundary': 'trust boundary violation', 'insecure-cookie': 'insecure cookie', 'jwt-unverified': 'JWT not verified',
  'weak-randomness': 'weak randomness', 'ldap-injection': 'LDAP injection', 'xpath-injection': 'XPath injection',
};

// live reports whether v carries taint that matters for cat.
function live(v, cat) {
  if (!v || !v.t || !v.t.live(cat)) return false;
  return !v.t.local || LOCAL_OK.has(cat);
}

// deepLive is live for v or anything v holds.
function deepLive(v, cat) {
  if (live(v, cat)) return v;
  const t = deepTaint(v);
  if (!t || !t.live(cat) || (t.local && !LOCAL_OK.has(cat))) return null;
  return Val.of({ t, s: TAINTED });
}

function sink(A, cat, node, fr, v, what, opts = {}) {
  A.judge(cat, node, fr);
  const x = opts.deep ? deepLive(v, cat) : (live(v, cat) ? v : null);
  if (!x) return false;
  const src = x.t.tr.source().text;
  A.report(cat, node, fr, x, what, { msg: `${src} reaches ${what} (${NAMES[cat]})`, ...opts });
  return true;
}

// hostPrefix reports whether the tainted part of a URL can choose its host:
// nothing fixed before it, or only a scheme or part of a host.
function hostOpen(v, forRedirect) {
  const p = prefixOf(v);
  if (p === null) return false;
  if (p === '') return true;
  if (forRedirect && (p === '/' || p === '\\')) return true;
  if (/^\s*(https?:)?\/\/?[^/?#\\]*$/i.test(p)) return true;
  if (/^\s*[a-z][a-z0-9+.-]*:\/*[^/?#\\]*$/i.test(p)) return true;
  return false;
}

function redirect(A, node, fr, v, what) {
  A.judge('open-redirect', node, fr);
  if (!live(v, 'open-redirect') || !hostOpen(v, true)) return false;
  return sink(A, 'open-redirect', node, fr, v, what);
}

function ssrf(A, node, fr, v, what) {
  A.judge('ssrf', node, fr);
  if (!v) return false;
  if (v.props && !v.t) {
    // An options object: {url}, {host}, {hostname}, {uri}, {baseURL}.
    for (const k of ['url', 'uri', 'host', 'hostname', 'baseURL', 'origin']) {
      const x = v.props.get(k);
      if (x && live(x, 'ssrf') && (k === 'host' || k === 'hostname' || hostOpen(x, false))) return sink(A, 'ssrf', node, fr, x, what);
    }
    return false;
  }
  if (!live(v, 'ssrf') || !hostOpen(v, false)) return false;
  return sink(A, 'ssrf', node, fr, v, what);
}

// sqlText reports whether a string's known text reads like SQL.
const SQL_RE = /\b(select\b[\s\S]*\bfrom|insert\s+into|update\b[\s\S]*\bset\b|delete\s+from|replace\s+into|create\s+(table|index|view)|drop\s+(table|index|view)|alter\s+table|union\s+(all\s+)?select|where\b[\s\S]*[=<>]|order\s+by|values\s*\()/i;
function sqlText(v) {
  const s = text(v).replace(/[\u0001\u0002]/g, ' x ');
  return SQL_RE.test(s);
}

function sql(A, node, fr, v, what, needText) {
  if (needText && !sqlText(v)) return false;
  A.judge('sql-injection', node, fr);
  if (!live(v, 'sql-injection')) return false;
  if (v.obj) return false;
  return sink(A, 'sql-injection', node, fr, v, what);
}

// nosql checks a query object for fields an attacker can turn into
// operators ({$ne: null}) and for tainted $where code.
function nosql(A, node, fr, v, what) {
  A.judge('nosql-injection', node, fr);
  if (!v) return false;
  if (v.fn) return false;
  if (live(v, 'nosql-injection') && !v.str) return sink(A, 'nosql-injection', node, fr, v, what);
  if (!v.props || v.kind === 'arr') return false;
  if (v.props.has('where') || v.props.has('include') || v.props.has('attributes')) return false; // Sequelize/TypeORM options
  const seen = new Set();
  const walk = (o, depth) => {
    if (!o || !o.props || seen.has(o) || depth > 4) return false;
    seen.add(o);
    for (const [k, x] of o.props) {
      if (k === '$where' || k === '$function' || k === '$accumulator') continue; // reported where built
      if (k === '$eq') continue; // compared as a value, whatever it holds
      if (live(x, 'nosql-injection') && !x.str && !x.fn) return sink(A, 'nosql-injection', node, fr, x, what);
      if (x.props && walk(x, depth + 1)) return true;
    }
    if (o.spread && live(o.spread, 'nosql-injection')) return sink(A, 'nosql-injection', node, fr, o.spread, what);
    return false;
  };
  return walk(v, 0);
}

function xssValue(v) {
  // A request's whole container (req.body) is sent as JSON.
  if (!v || v.obj) return false;
  if (v.props && !v.t && v.kind !== 'arr') return false;
  return live(v, 'xss');
}

function htmlType(ct) { return ct === undefined || ct === null || /html|svg/i.test(ct) || ct === UNKNOWN; }

// cookie checks a cookie's options object for the secure and httpOnly flags.
function cookie(A, node, fr, opts, name, what, dflt) {
  const secure = flagOf(opts, 'secure', dflt.secure);
  const httpOnly = flagOf(opts, 'httpOnly', dflt.httpOnly);
  const sensitive = name === null || /sess|sid|token|auth|jwt|remember|login|user|id$/i.test(name);
  if (secure === false) {
    A.report('insecure-cookie', node, fr, null, what, { level: 'warning', cwe: httpOnly === false ? ['614', '1004'] : ['614'],
      msg: `${what} sets a cookie without the secure flag${httpOnly === false ? ' or httpOnly' : ''} (CWE-614)` });
  } else if (httpOnly === false && sensitive) {
    A.report('insecure-cookie', node, fr, null, what, { level: 'warning', cwe: ['1004'], msg: `${what} sets a cookie without the httpOnly flag (CWE-1004)` });
  }
}

// flagOf is an option's value: true, false, or dflt when absent or not known.
function flagOf(opts, key, dflt) {
  if (!opts || !opts.props) return dflt;
  if (!opts.props.has(key)) return opts.spread ? null : dflt;
  const v = opts.props.get(key);
  if (v.c === true) return true;
  if (v.c === false || v.c === 0 || v.c === '') return false;
  return null; // set from a variable: trust it
}

module.exports = { live, deepLive, sink, redirect, ssrf, sql, sqlText, nosql, xssValue, htmlType, cookie, flagOf, hostOpen, NAMES, LOCAL_OK };
