'use strict';
// Models of the platform, frameworks and libraries: which values are sources
// (a request's fields, argv, the environment, terminal input), which calls
// and assignments are sinks, which calls sanitize, and how callbacks are
// called. Rules are general: they name APIs, never a repository's files.

const V = require('./values');
const { Val, Step, Taint, BIT, ALL, join, derived, sanitize, flat, deepTaint, deepRand, TAINTED, UNKNOWN, text } = V;
const S = require('./sinks');
const { norm } = require('./names');
const { exprKey, clipText } = require('./analyze');
let templates = null;

const M = (...cats) => cats.reduce((m, c) => m | BIT[c], 0);
const URL_SAFE = M('xss', 'open-redirect', 'ssrf', 'path-traversal', 'nosql-injection', 'template-injection', 'trust-boundary');
const HOST_SAFE = M('open-redirect', 'ssrf', 'path-traversal');

// ---- values of models ----

function kindVal(kind, fields) { return Val.of({ kind, ...fields }); }

function pathOf(v) {
  if (!v || !v.kind) return null;
  if (v.kind.startsWith('m:') || v.kind.startsWith('g:')) return v.kind.slice(2);
  return null;
}

const GLOBAL_KINDS = new Set(['process', 'Math', 'JSON', 'Object', 'Array', 'Promise', 'Number', 'String', 'Boolean', 'Date',
  'eval', 'Function', 'setTimeout', 'setInterval', 'setImmediate', 'fetch', 'parseInt', 'parseFloat', 'isNaN', 'isFinite',
  'encodeURIComponent', 'encodeURI', 'decodeURIComponent', 'decodeURI', 'escape', 'unescape', 'atob', 'btoa', 'Buffer',
  'URL', 'URLSearchParams', 'console', 'document', 'window', 'location', 'globalThis', 'self', 'navigator', 'Symbol',
  'Reflect', 'RegExp', 'Error', 'Map', 'Set', 'WeakMap', 'Response', 'Request', 'Headers', 'structuredClone', '$', 'jQuery',
  'Handlebars', 'WebSocket', 'XMLHttpRequest', 'localStorage', 'sessionStorage', 'DOMParser']);

function global(A, name, node, fr) {
  if (name === 'require') return Val.of({ kind: 'g:require', native: (args, n, f) => requireCall(A, args, n, f) });
  if (name === '__dirname' || name === '__filename') return Val.of({ str: true, s: UNKNOWN });
  if (name === 'undefined' || name === 'NaN' || name === 'Infinity') return new Val();
  if (fr.mod.freeVal && !GLOBAL_KINDS.has(name)) {
    // A template's free names are fields of the data it was given.
    const v = fr.mod.freeVal;
    return v.t ? A.step(derived(v, false), name, node, fr) : new Val();
  }
  return kindVal('g:' + name);
}

function requireCall(A, args, node, fr) {
  const a = args[0];
  if (!a) return new Val();
  if (typeof a.c === 'string') return A.require(a.c, fr, node);
  S.sink(A, 'code-injection', node, fr, a, 'require');
  return new Val();
}

function packageVal(A, spec, fr) {
  return kindVal('m:' + norm(spec));
}

// sourceVal is a request field: tainted, with the access as its first step.
function sourceVal(A, textOf, node, fr, fields, local) {
  return A.source(textOf, node, fr, local, fields);
}

// ---- property reads ----

const REQ_OBJ = new Set(['query', 'params', 'body', 'cookies', 'signedCookies', 'headers', 'files', 'file', 'payload', 'state', 'fields', 'nextUrl', 'searchParams']);
const REQ_STR = new Set(['url', 'originalUrl', 'path', 'hostname', 'host', 'href', 'search', 'querystring', 'rawBody', 'resolvedUrl']);
const REQ_KEYS = new Set(['query', 'params', 'body', 'cookies', 'signedCookies', 'headers', 'files', 'file', 'url', 'originalUrl', 'path',
  'hostname', 'ip', 'method', 'session', 'user', 'app', 'socket', 'connection', 'protocol', 'secure', 'xhr', 'baseUrl', 'get', 'header', 'param']);
const REQ_STRINGS = new Set(['params', 'headers']);
const REQ_FN = new Set(['get', 'header', 'param', 'json', 'text', 'formData', 'arrayBuffer', 'blob']);

function prop(A, obj, key, node, fr) {
  const k = obj.kind;
  if (!k) return undefined;
  if (k.startsWith('m:') || k.startsWith('g:')) return moduleProp(A, obj, k, key, node, fr);
  switch (k) {
    case 'req':
    case 'ctx':
      return requestProp(A, obj, key, node, fr);
    case 'res':
      if (key === 'locals') return cached(obj, 'locals', () => Val.of({ props: new Map(), kind: 'obj' }));
      if (key === 'req') return cached(obj, 'req', () => kindVal('req'));
      return undefined;
    case 'session':
      return new Val();
    case 'rl':
    case 'stdin':
      return undefined;
    default:
      return undefined;
  }
}

function cached(obj, key, make) {
  if (!obj.props) obj.props = new Map();
  if (!obj.props.has(key)) obj.props.set(key, make());
  return obj.props.get(key);
}

// Request parts express-mongo-sanitize's middleware strips operator keys
// ('$gt', 'a.b') from, when the module mounts it on its app.
const MONGO_SANITIZED = new Set(['body', 'query', 'params', 'headers']);

// mongoSanitized reports whether mod requires express-mongo-sanitize and
// mounts it: app.use(name()) or app.use(name.sanitize()) (cached per module).
function mongoSanitized(mod) {
  if (!mod || typeof mod.code !== 'string') return false;
  if (mod.mongoSanitized === undefined) {
    const code = mod.code;
    const m = /(?:\b(\w+)\s*=\s*require\(\s*['"]express-mongo-sanitize['"]\s*\)|import\s+(\w+)\s+from\s+['"]express-mongo-sanitize['"])/.exec(code);
    const name = m && (m[1] || m[2]);
    mod.mongoSanitized = !!name && new RegExp(`\\.use\\(\\s*${name}(?:\\.sanitize)?\\s*\\(`).test(code);
  }
  return mod.mongoSanitized;
}

function requestProp(A, obj, key, node, fr) {
  const ctx = obj.kind === 'ctx';
  if (key === 'session') return cached(obj, 'session', () => kindVal('session', { props: new Map() }));
  if (ctx) {
    if (key === 'request' || key === 'req') return cached(obj, key, () => kindVal('req'));
    if (key === 'response' || key === 'res') return cached(obj, key, () => kindVal('res', { koa: true }));
    if (key === 'cookies') return cached(obj, key, () => kindVal('kcookies'));
    if (key === 'state') return cached(obj, key, () => Val.of({ props: new Map(), kind: 'obj' }));
    if (key === 'body') return new Val();
  }
  if (REQ_OBJ.has(key) || REQ_STR.has(key)) {
    if (!obj.srcCache) obj.srcCache = new Map();
    if (!obj.srcCache.has(key)) obj.srcCache.set(key, new Map());
    const txt = node.type === 'MemberExpression' ? A.src(node, fr) : (ctx ? 'ctx.' : 'req.') + key;
    const v = sourceVal(A, txt, node, fr, { obj: REQ_OBJ.has(key), str: REQ_STR.has(key) });
    // Route parameters and headers are strings: no object can come in.
    if (REQ_STRINGS.has(key)) v.strFields = true;
    if (!ctx && MONGO_SANITIZED.has(key) && mongoSanitized(fr.mod) && v.t) v.t = v.t.sanitized(M('nosql-injection'));
    v.props = obj.srcCache.get(key);
    if (key === 'cookies' && !ctx) v.kind = null;
    return v;
  }
  if (REQ_FN.has(key) && !ctx) {
    return Val.of({ kind: 'reqfn', native: (args, n, f) => sourceVal(A, A.src(n, f), n, f, { obj: key === 'json' || key === 'formData' }) });
  }
  if (ctx && key === 'get') {
    return Val.of({ kind: 'reqfn', native: (args, n, f) => sourceVal(A, A.src(n, f), n, f, {}) });
  }
  return undefined;
}

function moduleProp(A, obj, k, key, node, fr) {
  const p = k.slice(2);
  if (k === 'g:process') {
    if (key === 'env') return sourceVal(A, 'process.env', node, fr, { obj: true }, true);
    if (key === 'argv') return sourceVal(A, 'process.argv', node, fr, { kind: 'arr' }, true);
    if (key === 'stdin') return kindVal('stdin');
  }
  if (k === 'g:window' || k === 'g:globalThis' || k === 'g:self') return global(A, key, node, fr);
  if ((k === 'g:location' || k === 'g:document.location' || k === 'g:window.location') &&
      ['href', 'search', 'hash', 'pathname'].includes(key)) {
    return sourceVal(A, A.src(node, fr), node, fr, { str: true });
  }
  if (k === 'g:document' && ['URL', 'documentURI', 'baseURI', 'referrer'].includes(key)) {
    return sourceVal(A, A.src(node, fr), node, fr, { str: true });
  }
  if (k === 'g:document' && key === 'location') return kindVal('g:location');
  if (k === 'g:window' && key === 'name') return sourceVal(A, 'window.name', node, fr, { str: true });
  if (p === 'Math' || p === 'JSON' || p.length > 200) return kindVal(k + '.' + key);
  return kindVal(k + '.' + key);
}

// syntaxSource recognises sources by the shape of the access: Angular's
// ActivatedRoute (route.snapshot.queryParams, route.queryParamMap).
const ROUTE_KEYS = new Set(['queryParams', 'params', 'queryParamMap', 'paramMap', 'fragment', 'url']);
function syntaxSource(A, obj, node, key, fr) {
  if (key === 'XML_PARSE_NOENT' || key === 'NOENT') return Val.of({ noent: true });
  if (!ROUTE_KEYS.has(key) || (obj.props && obj.props.has(key))) return null;
  const o = node.object;
  const isSnapshot = o.type === 'MemberExpression' && !o.computed && o.property.name === 'snapshot';
  const routeName = recvName(isSnapshot ? o.object : o);
  if (!/(^|\.)(route|activatedRoute|activeRoute|_route|_activatedRoute)$/i.test(routeName)) return null;
  if (key === 'url' && !isSnapshot) return null;
  const v = sourceVal(A, A.src(node, fr), node, fr, { obj: true });
  v.strFields = true; // route parameters are strings
  return v;
}

// elem is a model's element for for-of: lines of a readline interface.
function elem(A, v, node, fr) {
  if (v.kind === 'rl' || v.kind === 'stdin') return sourceVal(A, 'terminal input', node, fr, { str: true }, true);
  return null;
}

// ---- entry points ----

const REQ_TYPES = /^(Request|NextRequest|NextApiRequest|FastifyRequest|IncomingMessage|ExpressRequest|Req|HttpRequest)$/;
const RES_TYPES = /^(Response|NextApiResponse|ServerResponse|FastifyReply|ExpressResponse|Res|HttpResponse)$/;

function typeName(p) {
  const ta = p.typeAnnotation && p.typeAnnotation.typeAnnotation;
  if (!ta) return '';
  if (ta.type === 'TSTypeReference' && ta.typeName) return ta.typeName.name || (ta.typeName.right && ta.typeName.right.name) || '';
  return '';
}

function paramName(p) {
  if (p.type === 'Identifier') return p.name;
  if (p.type === 'AssignmentPattern' && p.left.type === 'Identifier') return p.left.name;
  if (p.type === 'TSParameterProperty') return paramName(p.parameter);
  return '';
}

// entryArgs gives a function walked as an entry point the values its
// parameters' names and types suggest.
function entryArgs(A, clo, fr) {
  const params = clo.node.params;
  const names = params.map(paramName);
  const out = [];
  const server = clo.useServer || (clo.mod.useServer && clo.exported);
  const nextRoute = /(^|\/)(app|pages|src\/app|src\/pages)\/.*\b(page|route|layout)\.[jt]sx?$|(^|\/)pages\/.*\.[jt]sx?$/.test(clo.mod.path);
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    const n = names[i];
    const tn = typeName(p.type === 'AssignmentPattern' ? p.left : p);
    let v;
    if (server) {
      v = A.source(n || 'argument', p, fr, false, {});
      v.s = TAINTED;
    } else if (/^_?(req|request)$/i.test(n) || REQ_TYPES.test(tn)) {
      v = kindVal('req');
    } else if (/^_?(res|response)$/i.test(n) || RES_TYPES.test(tn)) {
      v = kindVal('res');
    } else if (n === 'reply') {
      v = kindVal('res', { fastify: true });
    } else if (n === 'h' && i > 0 && /^_?(req|request)$/i.test(names[i - 1])) {
      v = kindVal('h');
    } else if (/^(ctx|context)$/.test(n)) {
      v = kindVal('ctx');
    } else if (n === 'args' && i === 1 && /^(_+|parent|root|obj|source|src|prev)$/.test(names[0] || '')) {
      // A GraphQL resolver's arguments: typed scalars (strings), from the client.
      v = A.source('args', p, fr, false, { obj: true });
      v.strFields = true;
    } else if (n === 'searchParams') {
      v = A.source('searchParams', p, fr, false, { obj: true });
    } else if (p.type === 'ObjectPattern' && i === 0 && (REQ_TYPES.test(tn) || /^_?(res|response|reply)$/.test(names[1] || '')) &&
        p.properties.every((q) => q.type === 'Property' && !q.computed && q.key.type === 'Identifier' && REQ_KEYS.has(q.key.name))) {
      // ({ params, query }: Request, res) => ...
      v = kindVal('req');
    } else if (p.type === 'ObjectPattern' && nextRoute && i <= 1) {
      v = Val.of({ props: new Map(), kind: 'obj' });
      for (const q of p.properties) {
        if (q.type === 'Property' && !q.computed && q.key.type === 'Identifier' && ['searchParams', 'params', 'query'].includes(q.key.name)) {
          v.props.set(q.key.name, A.source(q.key.name, q, fr, false, { obj: true }));
        }
      }
    } else {
      v = new Val();
    }
    out.push(v);
  }
  return out;
}

function entryFrame(A, clo, fr, sc) {
  const names = clo.node.params.map(paramName);
  if (names.length >= 2 && /^_?(req|request)$/i.test(names[0]) && names[1] === 'h') fr.hapi = true;
}

function instanceOf(A, cls) {
  const obj = Val.of({ props: new Map(), kind: 'obj' });
  obj.proto = A.methodsOf(cls, new Map());
  obj.cls = cls;
  return obj;
}

function superCall() {}

// routeArgs are the values a framework passes a route handler.
function routeArgs(fnVal) {
  const names = fnVal.fn.node.params.map(paramName);
  if (/^(ctx|context)$/.test(names[0] || '')) return [kindVal('ctx'), Val.of({ native: () => new Val() })];
  const res = names[1] === 'reply' ? kindVal('res', { fastify: true }) : names[1] === 'h' ? kindVal('h') : kindVal('res');
  return [kindVal('req'), res, Val.of({ native: () => new Val() })];
}

function invokeFns(A, c, argsFor) {
  for (let i = 0; i < c.args.length; i++) {
    const f = c.args[i];
    if (f && f.fn) {
      const args = argsFor(f, i);
      const hapi = args.length >= 2 && args[1].kind === 'h';
      const r = A.invoke(f.fn, f.fn.self || null, args, c.node, c.fr, { entry: hapi });
      if (hapi) void r;
    }
  }
}

// ---- calls ----

const HTTP_VERBS = new Set(['get', 'post', 'put', 'delete', 'del', 'patch', 'all', 'use', 'options', 'head', 'param', 'route', 'any', 'on']);

function call(A, c) {
  const p = pathOf(c.fn);
  if (p !== null) {
    const r = pathCall(A, c, p);
    if (r !== undefined) return r;
  }
  if (c.fn.native) return undefined;
  if (c.recv && c.method !== null) {
    let r;
    switch (c.recv.kind) {
      case 'res': r = resCall(A, c); break;
      case 'ctx': r = ctxCall(A, c); break;
      case 'h': r = hapiCall(A, c); break;
      case 'req': r = reqCall(A, c); break;
      case 'app': r = appCall(A, c); break;
      case 'kcookies': r = kcookiesCall(A, c); break;
      case 'rl': r = rlCall(A, c); break;
      case 'stdin': r = emitterSource(A, c, true); break;
      case 'vm2': if (c.method === 'run' || c.method === 'runFile') { S.sink(A, 'code-injection', c.node, c.fr, c.args[0], A.src(c.callee, c.fr)); return new Val(); } break;
      case 'jq': r = jqCall(A, c); break;
      case 'qb': r = qbCall(A, c); break;
      case 'hash': return c.method === 'digest' ? new Val() : c.recv;
      case 'socket': r = socketCall(A, c); break;
      case 'ldap': r = ldapCall(A, c); break;
      case 'zip':
        if (['extractAllTo', 'extractAllToAsync', 'extractEntryTo'].includes(c.method)) {
          S.sink(A, 'path-traversal', c.node, c.fr, c.recv, calleeText(A, c) + ' (entry names from the archive)');
          return new Val();
        }
        break;
      case 'tplfn': break;
      default: break;
    }
    if (r !== undefined) return r;
    if (c.fn.fn) return undefined; // the object's own method
    r = methodCall(A, c);
    if (r !== undefined) return r;
  }
  return undefined;
}

function calleeText(A, c) { return A.src(c.callee, c.fr); }

// pathCall models functions of packages and globals by their path
// ('child_process.exec', 'eval').
function pathCall(A, c, p) {
  const a = c.args;
  const fr = c.fr, node = c.node;
  const what = () => calleeText(A, c);
  const a0 = a[0] || new Val();
  // The last segment for module members reached through a default export
  // (import cp from 'child_process'; cp.exec).
  switch (p) {
    case 'express': case 'koa': case 'fastify': case 'hapi.server': case 'hapi.Server': case 'express.Router': case 'connect':
    case 'restify.createServer': case 'polka': case 'koa-router': case '@koa/router': case 'Router': case 'express.application':
      return kindVal('app');
    case 'http.createServer': case 'https.createServer': case 'http2.createServer': case 'http2.createSecureServer':
      invokeFns(A, c, () => [kindVal('req'), kindVal('res')]);
      return kindVal('app');
    case 'express-session': case 'cookie-session': case 'koa-session': case 'fastify-session': case '@fastify/session':
      sessionOptions(A, c, p);
      return new Val();
    case 'util.promisify': case 'util.callbackify': case 'bluebird.promisify': case 'Promise.promisify':
      return a0;
    case 'util.format': case 'sprintf-js.sprintf': case 'sprintf-js.vsprintf': case 'format': case 'util.inspect':
      return A.opaque(a);
    case 'eval': case 'window.eval': case 'globalThis.eval':
      S.sink(A, 'code-injection', node, fr, a0, 'eval');
      return A.opaque(a);
    case 'Function':
      for (const x of a) S.sink(A, 'code-injection', node, fr, x, c.isNew ? 'new Function' : 'Function');
      return new Val();
    case 'setTimeout': case 'setInterval': case 'setImmediate': case 'window.setTimeout': case 'window.setInterval':
      if (!a0.fn) S.sink(A, 'code-injection', node, fr, a0, p);
      invokeFns(A, c, () => []);
      return new Val();
    case 'vm.runInNewContext': case 'vm.runInContext':
      if (typeof a0.c === 'string' && a[1] && a[1].props) return sandboxRun(A, c, a0.c, a[1]);
      S.sink(A, 'code-injection', node, fr, a0, what());
      return new Val();
    case 'vm.runInThisContext': case 'vm.compileFunction':
    case 'vm.Script': case 'vm.SourceTextModule': case 'vm.createScript':
      S.sink(A, 'code-injection', node, fr, a0, what());
      return new Val();
    case 'vm2.VM': case 'vm2.NodeVM':
      return kindVal('vm2');
    case 'mathjs.evaluate': case 'mathjs.eval': case 'mathjs.compile': case 'mathjs.parse':
    case 'safe-eval': case 'static-eval': case 'notevil': case 'notevil.eval': case 'expr-eval.Parser.evaluate': case 'expr-eval.Parser.parse':
      S.sink(A, 'code-injection', node, fr, a0, what());
      return new Val();
    case 'mathjs.create':
      return kindVal('m:mathjs');
    case 'require':
      return undefined;
    case 'Math.random':
      return Val.of({ r: new Step('Math.random()', fr.mod.path, node.loc.start.line, node.loc.start.column + 1, null) });
    case 'JSON.parse':
      return a0.t ? Val.of({ t: a0.t, s: TAINTED }) : new Val();
    case 'JSON.stringify':
      return flatStr(a0);
    case 'Object.assign': case 'lodash.assign': case 'lodash.merge': case 'lodash.extend': case 'lodash.defaults': case 'lodash.defaultsDeep': {
      const target = a0.props ? a0 : Val.of({ props: new Map(), kind: 'obj' });
      for (const x of a.slice(1)) {
        if (x.props) for (const [k, y] of x.props) target.props.set(k, y);
        if (x.t) target.spread = target.spread ? join(target.spread, x) : x;
        if (x.t && !target.elem) target.elem = derived(x, false);
      }
      return target;
    }
    case 'Object.keys': case 'Object.values': case 'Object.entries': case 'Object.getOwnPropertyNames': {
      const t = deepTaint(a0);
      return Val.of({ kind: 'arr', elem: t ? Val.of({ t, s: TAINTED }) : new Val() });
    }
    case 'Object.freeze': case 'Object.seal': case 'Promise.resolve': case 'Promise.all': case 'Promise.allSettled': case 'Promise.race': case 'Promise.any':
      return a0;
    case 'Array.from': case 'Array.of':
      return Val.of({ kind: 'arr', elem: p === 'Array.of' ? a.reduce((x, y) => join(x, y), null) : A.elemOf(a0, node, fr) });
    case 'String': case 'String.raw':
      return a0.t || a0.r ? Object.assign(flatStr(a0), { str: true }) : Val.of({ str: true, c: typeof a0.c === 'string' ? a0.c : undefined, s: typeof a0.c === 'string' ? a0.c : null });
    case 'Number': case 'parseInt': case 'parseFloat': case 'Number.parseInt': case 'Number.parseFloat': case 'Boolean':
    case 'isNaN': case 'isFinite': case 'Number.isInteger': case 'Number.isSafeInteger': case 'Number.isFinite': case 'Array.isArray':
    case 'Date': case 'Date.parse': case 'Date.now': case 'validator.toInt': case 'validator.toFloat': case 'validator.toBoolean':
    case 'validator.toDate': case 'validator.whitelist': case 'BigInt':
      return Val.of({ r: a0.r });
    case 'encodeURIComponent': case 'querystring.escape': case 'escape': case 'qs.stringify': case 'querystring.stringify':
      return sanitizedStr(a0, URL_SAFE);
    case 'encodeURI':
      return sanitizedStr(a0, M('xss'));
    case 'decodeURIComponent': case 'decodeURI': case 'unescape': case 'atob': case 'btoa': case 'querystring.unescape':
      return flatStr(a0);
    case 'escape-html': case 'html-escaper.escape': case 'he.encode': case 'he.escape': case 'entities.encode': case 'entities.encodeHTML':
    case 'entities.escape': case 'entities.escapeUTF8': case 'validator.escape': case 'lodash.escape': case 'lodash.escape.default': case 'xss':
    case 'xss.filterXSS': case 'sanitize-html': case 'dompurify.sanitize': case 'escape-goat.htmlEscape': case 'htmlspecialchars':
    case 'secure-filters.html': case 'handlebars.escapeExpression': case 'handlebars.Utils.escapeExpression': case 'ejs.escapeXML':
    case 'mustache.escape': case 'xss-filters.inHTMLData': case 'xss-filters.inDoubleQuotedAttr': case 'escape-html.default':
    case 'DOMPurify.sanitize': case 'validator.stripLow': case 'filterXSS': case 'sanitizeHtml': case 'escapeHtml':
      return sanitizedStr(a0, M('xss'));
    case 'mongo-sanitize': case 'mongo-sanitize.sanitize':
      return sanitize(a0, M('nosql-injection'));
    case 'sqlstring.escape': case 'mysql.escape': case 'mysql.escapeId': case 'mysql.format': case 'sqlstring.format': case 'pg-format':
    case 'pg-format.literal': case 'pg-format.ident': case 'pg.escapeLiteral': case 'pg.escapeIdentifier': case 'sequelize.escape':
      return sanitizedStr(a0, M('sql-injection'));
    case 'shell-quote.quote': case 'shell-escape': case 'shescape.quote': case 'shescape.escape': case 'shell-escape-tag': case 'any-shell-escape':
      return sanitizedStr(a.length > 0 ? A.opaque(a) : a0, M('command-injection'));
    case 'ldap-escape.filter': case 'ldap-escape.dn': case 'ldapjs.escape':
      return sanitizedStr(a0, M('ldap-injection'));
    case 'path.basename': case 'path.posix.basename': case 'path.win32.basename': case 'sanitize-filename':
      return sanitizedStr(a0, M('path-traversal'));
    case 'path.extname':
      return Val.of({ str: true });
    case 'path.join': case 'path.resolve': case 'path.normalize': case 'path.posix.join': case 'path.posix.resolve': case 'path.posix.normalize':
    case 'path.relative': case 'path.dirname': {
      const v = A.opaque(a);
      v.str = true;
      if (v.t) {
        v.norm = true;
        // The text: the parts in order, so that a fixed root stays a prefix.
        let s = '';
        for (const x of a) s += (s && !s.endsWith('/') ? '/' : '') + text(x);
        v.s = V.clip(s);
      }
      return v;
    }
    case 'url.parse': case 'querystring.parse': case 'qs.parse': case 'url.format': case 'url.resolve':
      return A.opaque(a);
    case 'URL': case 'url.URL': {
      // new URL(input, base): the input decides the host unless it is fixed.
      if (a0.t) return Object.assign(derived(a0, false), { s: text(a0), kind: null });
      if (a[1] && a[1].t && !(typeof a0.c === 'string' && /^[a-z]+:\/\//i.test(a0.c))) return Object.assign(derived(a[1], false), { s: TAINTED });
      return new Val();
    }
    case 'URLSearchParams':
      return a0.t ? derived(a0, false) : new Val();
    case 'Buffer.from':
      return a0.t ? Val.of({ t: a0.t, s: TAINTED, kind: 'buf' }) : new Val();
    case 'crypto.createHash': case 'crypto.createHmac':
      return kindVal('hash');
    case 'crypto.randomBytes': case 'crypto.randomUUID': case 'crypto.randomInt': case 'uuid.v4': case 'uuid.v1': case 'uuid': case 'nanoid':
    case 'bcrypt.hash': case 'bcrypt.hashSync': case 'bcrypt.compare': case 'bcrypt.compareSync': case 'bcryptjs.hash': case 'bcryptjs.hashSync':
    case 'bcryptjs.compare': case 'bcryptjs.compareSync': case 'argon2.hash': case 'argon2.verify': case 'md5': case 'sha1': case 'sha256':
    case 'crypto.pbkdf2Sync': case 'crypto.scryptSync': case 'crypto.timingSafeEqual':
      invokeFns(A, c, () => []);
      return new Val();
    case 'Math.floor': case 'Math.ceil': case 'Math.round': case 'Math.trunc': case 'Math.abs': case 'Math.max': case 'Math.min':
    case 'Math.pow': case 'Math.sqrt': case 'Math.sign':
      return Val.of({ r: a.reduce((r, x) => r || (x && x.r), null) });
    case 'adm-zip':
      // An archive from input: its entries' names choose where they go.
      return a0.t ? Val.of({ kind: 'zip', t: a0.t, s: TAINTED }) : kindVal('zip');
    case 'readline.createInterface': case 'readline.promises.createInterface':
      return kindVal('rl');
    case 'prompt-sync':
      return Val.of({ native: (args, n, f) => sourceVal(A, 'terminal input', n, f, { str: true }, true) });
    case 'prompt': case 'window.prompt':
      return new Val();
    case 'sequelize.literal': case 'Sequelize.literal': case 'sequelize.Sequelize.literal': case 'knex.raw':
      S.sql(A, node, fr, a0, what(), false);
      return new Val();
    case 'sequelize.Sequelize': case 'sequelize': case 'mysql.createConnection': case 'mysql.createPool': case 'mysql.createPoolCluster':
    case 'pg.Pool': case 'pg.Client': case 'pg': case 'sqlite.Database': case 'sqlite': case 'sqlite.open': case 'knex': case 'typeorm.DataSource':
    case 'typeorm.createConnection': case 'typeorm.getConnection': case 'typeorm.getManager': case 'typeorm.getRepository': case '@prisma/client.PrismaClient':
    case 'mssql.connect': case 'mssql.ConnectionPool': case 'oracledb.getConnection': case 'mongoose.model': case 'mongodb.MongoClient.connect':
      invokeFns(A, c, () => [new Val(), kindVal('db')]);
      return kindVal('db');
    // ---- command ----
    case 'child_process.exec': case 'child_process.execSync': case 'shelljs.exec': case 'execa.command': case 'execa.commandSync':
    case 'execa.execaCommand': case 'execa.execaCommandSync': case 'child_process.exec.__promisify__':
      S.sink(A, 'command-injection', node, fr, a0, what());
      invokeFns(A, c, () => [new Val(), new Val(), new Val()]);
      return new Val();
    case 'child_process.spawn': case 'child_process.spawnSync': case 'child_process.execFile': case 'child_process.execFileSync':
    case 'cross-spawn': case 'cross-spawn.sync': case 'execa': case 'execa.sync': case 'execa.execa': case 'execa.execaSync':
    case 'child_process.fork':
      spawnSink(A, c, what());
      invokeFns(A, c, () => [new Val(), new Val(), new Val()]);
      return kindVal('proc');
    // ---- templates ----
    case 'ejs.render': case 'ejs.compile': case 'pug.render': case 'pug.compile': case 'handlebars.compile': case 'handlebars.precompile':
    case 'nunjucks.renderString': case 'nunjucks.compile': case 'lodash.template': case 'dot.template': case 'dot.compile':
    case 'mustache.render': case 'swig.render': case 'swig.compile': case 'hogan.js.compile': case 'twig.twig': case 'eta.render':
    case 'eta.renderString': case 'liquidjs.parseAndRender': case 'doT.template': case 'underscore.template': case 'art-template.render':
    case 'squirrelly.render': case 'velocityjs.render': case 'marko.load':
      return templateCall(A, c, p, what());
    case 'handlebars.SafeString':
      S.sink(A, 'xss', node, fr, a0, what());
      return Val.of({ str: true });
    case 'swig.setDefaults': case 'nunjucks.configure': case 'swig.Swig':
      autoescapeOff(A, c, p);
      return new Val();
    // ---- XML, deserialization ----
    case 'libxmljs.parseXml': case 'libxmljs.parseXmlString': case 'libxmljs.parseXmlAsync': case 'libxmljs.Document.fromXml': {
      const opts = a[1];
      if (opts && opts.props && opts.props.get('noent') && opts.props.get('noent').c === true) {
        if (!S.sink(A, 'xxe', node, fr, a0, what() + ' with noent: true') && a0.c === undefined) {
          A.report('xxe', node, fr, null, what(), { level: 'warning', msg: `${what()} resolves external entities (noent: true) (XML external entities)` });
        }
      }
      return a0.t ? derived(a0, false) : new Val();
    }
    case 'node-serialize.unserialize': case 'funcster.deepDeserialize': case 'serialize-to-js.deserialize': case 'cryo.parse':
    case 'superserial.parse':
      S.sink(A, 'insecure-deserialization', node, fr, a0, what());
      return a0.t ? derived(a0, false) : new Val();
    case 'js-yaml.load': case 'js-yaml.loadAll': {
      const opts = a[1];
      const unsafeSchema = opts && opts.props && opts.props.get('schema') && /DEFAULT_FULL|UNSAFE/.test(String(opts.props.get('schema').kind || ''));
      if (unsafeSchema || yamlUnsafe(A, fr.mod.path)) S.sink(A, 'insecure-deserialization', node, fr, a0, what());
      return a0.t ? derived(a0, false) : new Val();
    }
    // ---- SSRF ----
    case 'http.get': case 'http.request': case 'https.get': case 'https.request': case 'axios': case 'axios.get': case 'axios.post':
    case 'axios.put': case 'axios.patch': case 'axios.delete': case 'axios.head': case 'axios.options': case 'axios.request':
    case 'fetch': case 'window.fetch': case 'undici.fetch': case 'undici.request': case 'undici.stream': case 'got': case 'got.get': case 'got.post':
    case 'got.put': case 'got.patch': case 'got.delete': case 'got.head': case 'got.stream': case 'request': case 'request.get': case 'request.post':
    case 'request.put': case 'request.patch': case 'request.del': case 'request.delete': case 'request.head': case 'request-promise':
    case 'request-promise.get': case 'request-promise.post': case 'needle.get': case 'needle.post': case 'needle.put': case 'needle.head':
    case 'needle.delete': case 'superagent.get': case 'superagent.post': case 'superagent.put': case 'superagent.delete': case 'superagent.head':
    case 'ky': case 'ky.get': case 'ky.post': case 'phin': case 'bent': case 'wreck.get': case '@hapi/wreck.get':
      return ssrfCall(A, c, a0, what());
    case 'needle': case 'needle.request': case 'superagent':
      return ssrfCall(A, c, a[1] || new Val(), what());
    case 'axios.create':
      return kindVal('m:axios');
    // ---- redirect (Next.js, fetch API) ----
    case 'next/navigation.redirect': case 'next/navigation.permanentRedirect': case 'next/server.NextResponse.redirect':
    case 'Response.redirect': case 'next/server.NextResponse.rewrite':
      S.redirect(A, node, fr, a0, what());
      return new Val();
    case 'Response': case 'next/server.NextResponse':
      if (c.isNew && S.xssValue(a0) && headersHtml(a[1])) S.sink(A, 'xss', node, fr, a0, what());
      return new Val();
    // ---- JWT ----
    case 'jsonwebtoken.decode': case 'jose.decodeJwt': case 'jwt-decode': case 'jwt-decode.jwtDecode': case 'jwt-decode.default':
      jwtDecode(A, c, a0, what());
      return a0.t ? derived(a0, false) : new Val();
    case 'jsonwebtoken.verify':
      // A verified token's claims are the signer's, not the client's,
      // unless the verification accepts unsigned tokens.
      const claims = jwtVerify(A, c, what()) && a0.t ? derived(a0, false) : new Val();
      invokeFns(A, c, () => [new Val(), claims]);
      return claims;
    case 'jsonwebtoken.sign': {
      const opts = a[2];
      const alg = opts && opts.props && opts.props.get('algorithm');
      if (alg && typeof alg.c === 'string' && alg.c.toLowerCase() === 'none') {
        A.report('jwt-unverified', node, fr, null, what(), { level: 'error', msg: `${what()} signs a token with the "none" algorithm (JWT not verified)` });
      }
      invokeFns(A, c, () => [new Val(), new Val()]);
      return new Val();
    }
    case 'jwt-simple.decode':
      if (a[2] && a[2].c === true) A.report('jwt-unverified', node, fr, a0.t ? a0 : null, what(), { level: a0.t ? 'error' : 'warning', msg: `${what()} decodes a token without verifying its signature (JWT not verified)` });
      return a0.t ? derived(a0, false) : new Val();
    // ---- LDAP, XPath ----
    case 'ldapjs.createClient': case 'ldapjs.Client':
      return kindVal('ldap');
    case 'ldapjs.parseFilter':
      S.sink(A, 'ldap-injection', node, fr, a0, what());
      return new Val();
    case 'xpath.select': case 'xpath.select1': case 'xpath.evaluate': case 'xpath.parse': case 'document.evaluate':
    case 'xpath.selectWithResolver': case 'fontoxpath.evaluateXPath': case 'fontoxpath.evaluateXPathToNodes':
    case 'fontoxpath.evaluateXPathToString': case 'fontoxpath.evaluateXPathToFirstNode':
      S.sink(A, 'xpath-injection', node, fr, a0, what());
      return new Val();
    // ---- DOM ----
    case 'document.write': case 'document.writeln': case 'window.document.write':
      for (const x of a) S.sink(A, 'xss', node, fr, x, what());
      return new Val();
    case 'location.assign': case 'location.replace': case 'window.location.assign': case 'window.location.replace': case 'window.open':
      S.redirect(A, node, fr, a0, what());
      return new Val();
    case '$': case 'jQuery': case 'jquery': case 'cheerio.load':
      if (p !== 'cheerio.load' && S.live(a0, 'xss') && !a0.fn) {
        const pre = V.prefixOf(a0);
        if (pre === '' || (pre !== null && pre.trim().startsWith('<'))) S.sink(A, 'xss', node, fr, a0, what());
      }
      invokeFns(A, c, () => []);
      return kindVal('jq');
    default:
      break;
  }
  const fsm = /^fs\.(?:promises\.)?(\w+)$/.exec(p);
  // an fs call that opens no file by a path it is given (realpath, fstat): judged, no sink
  if (fsm && !FS_PATH.has(fsm[1].replace(/Sync$/, ''))) A.judge('path-traversal', node, fr);
  if (fsm && FS_PATH.has(fsm[1].replace(/Sync$/, ''))) {
    const m = fsm[1].replace(/Sync$/, '');
    const n = FS_TWO.has(m) ? 2 : 1;
    for (let i = 0; i < n && i < a.length; i++) {
      if (S.sink(A, 'path-traversal', node, fr, a[i], what())) break;
    }
    invokeFns(A, c, () => [new Val(), new Val()]);
    if (m === 'createReadStream' || m === 'createWriteStream') return kindVal('stream');
    return new Val();
  }
  // Members of packages not modelled: an unknown function.
  return undefined;
}

// FS_PATH are the fs functions whose first argument (FS_TWO: first two) is
// a path.
const FS_PATH = new Set(['readFile', 'writeFile', 'appendFile', 'createReadStream', 'createWriteStream', 'unlink', 'rm', 'rmdir',
  'readdir', 'mkdir', 'stat', 'lstat', 'exists', 'access', 'open', 'opendir', 'truncate', 'chmod', 'chown', 'readlink',
  'rename', 'copyFile', 'cp', 'link', 'symlink', 'utimes', 'outputFile', 'outputJson', 'readJson', 'writeJson', 'remove', 'move',
  'copy', 'ensureFile', 'ensureDir', 'emptyDir', 'pathExists', 'watch', 'watchFile', 'mkdtemp']);
const FS_TWO = new Set(['rename', 'copyFile', 'cp', 'link', 'symlink', 'move', 'copy']);

// sandboxRun follows vm.runInContext(CODE, sandbox) for constant code: the
// code is run with the sandbox's fields as its globals, and what it does is
// reported at the vm call.
function sandboxRun(A, c, code, sandbox) {
  const { parseScript } = require('./parse');
  const { Scope, Frame } = require('./analyze');
  let ast;
  try {
    ast = parseScript(code);
  } catch {
    return new Val();
  }
  const loc = c.node.loc;
  const stack = [ast];
  while (stack.length) {
    const n = stack.pop();
    if (!n || typeof n.type !== 'string') continue;
    n.loc = loc;
    for (const k of Object.keys(n)) {
      if (k === 'loc' || k === 'range' || k === 'parent') continue;
      const x = n[k];
      if (Array.isArray(x)) for (const y of x) stack.push(y);
      else if (x && typeof x.type === 'string') stack.push(x);
    }
  }
  const mod = { path: c.fr.mod.path, code, ast, kind: 'vm', entries: true, useServer: false, moduleVal: Val.of({ props: new Map([['exports', new Val()]]) }) };
  const sc = new Scope(null, true, 0);
  mod.scope = sc;
  for (const [k, v] of sandbox.props) sc.vars.set(k, v);
  const fr = new Frame(mod, null, new Val(), c.fr.depth + 1);
  let last = new Val();
  for (const st of ast.body) {
    if (st.type === 'ExpressionStatement') last = A.ev(st.expression, sc, fr);
    else A.exec(st, sc, fr);
  }
  return last;
}

function flatStr(v) {
  const t = deepTaint(v);
  const r = deepRand(v);
  return Val.of({ t, r, str: true, s: t ? TAINTED : null });
}

function sanitizedStr(v, mask) {
  const out = flatStr(v);
  if (out.t) {
    out.t = out.t.sanitized(mask);
    if ((out.t.m & ALL) === ALL) out.t = null;
  }
  return out;
}

function headersHtml(init) {
  if (!init || !init.props) return false;
  const h = init.props.get('headers');
  if (!h || !h.props) return false;
  for (const [k, v] of h.props) if (/^content-type$/i.test(k) && typeof v.c === 'string' && /html/i.test(v.c)) return true;
  return false;
}

function spawnSink(A, c, what) {
  const a = c.args;
  const file = a[0] || new Val();
  let args = a[1], opts = a[2];
  if (args && args.props && args.kind !== 'arr' && !opts) { opts = args; args = null; }
  const shell = opts && opts.props && opts.props.get('shell');
  const withShell = shell && shell.c !== undefined && shell.c !== false && shell.c !== null && shell.c !== '';
  if (S.sink(A, 'command-injection', c.node, c.fr, file, what)) return;
  const shellProgram = typeof file.c === 'string' && /^(\/(usr\/)?bin\/)?(ba|z|da|k)?sh$|^cmd(\.exe)?$|^powershell(\.exe)?$|^pwsh$/i.test(file.c);
  if ((withShell || shellProgram) && args) S.sink(A, 'command-injection', c.node, c.fr, args, what, { deep: true });
}

// ssrfCall checks a request's URL; when the client chooses the host, the
// response is the client's content too (passed to callbacks, returned).
function ssrfCall(A, c, url, what) {
  const open = S.ssrf(A, c.node, c.fr, url, what);
  let resp = new Val();
  if (open) {
    const t = url.t || deepTaint(url);
    resp = A.step(Val.of({ t, s: TAINTED }), `the response of ${what}`, c.node, c.fr);
  }
  invokeFns(A, c, () => [new Val(), resp, resp]);
  return resp;
}

function templateCall(A, c, p, what) {
  const a0 = c.args[0] || new Val();
  if (S.sink(A, 'template-injection', c.node, c.fr, a0, what)) return new Val();
  if (!templates) templates = require('./templates');
  return templates.fromString(A, c, p, a0);
}

function autoescapeOff(A, c, p) {
  for (const o of c.args) {
    if (!o || !o.props) continue;
    const ae = o.props.get('autoescape');
    if (ae && ae.c === false) {
      A.report('xss', c.node, c.fr, null, calleeText(A, c), { level: 'warning', msg: `${calleeText(A, c)} turns template autoescaping off: every {{ value }} is printed unescaped (cross-site scripting)` });
    }
  }
}

function sessionOptions(A, c, p) {
  const o = c.args[0];
  if (!o || !o.props) return;
  const what = calleeText(A, c);
  const ck = p === 'express-session' || p === 'fastify-session' || p === '@fastify/session' ? o.props.get('cookie') : o;
  if (p === 'express-session' || p === 'fastify-session' || p === '@fastify/session') {
    if (!ck) {
      if (!o.spread) A.report('insecure-cookie', c.node, c.fr, null, what, { level: 'warning', cwe: ['614'], msg: `${what} sets its session cookie without the secure flag (no cookie options) (CWE-614)` });
      return;
    }
    S.cookie(A, c.node, c.fr, ck, null, what, { secure: false, httpOnly: true });
    return;
  }
  if (p === 'koa-session') {
    S.cookie(A, c.node, c.fr, o, null, what, { secure: null, httpOnly: true });
    return;
  }
  S.cookie(A, c.node, c.fr, ck, null, what, { secure: false, httpOnly: true });
}

// depVersion is the [major, minor, patch] of a dependency as the nearest
// package.json above file declares it, or null.
function depVersion(A, file, name) {
  if (!A.pkgCache) A.pkgCache = new Map();
  let dir = file.includes('/') ? file.slice(0, file.lastIndexOf('/')) : '';
  for (;;) {
    const pj = dir ? dir + '/package.json' : 'package.json';
    let pkg = A.pkgCache.get(pj);
    if (pkg === undefined) {
      const txt = A.readRel(pj);
      try {
        pkg = txt ? JSON.parse(txt) : null;
      } catch {
        pkg = null;
      }
      A.pkgCache.set(pj, pkg);
    }
    if (pkg) {
      const v = (pkg.dependencies && pkg.dependencies[name]) || (pkg.devDependencies && pkg.devDependencies[name]);
      if (typeof v === 'string') {
        const m = /(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(v);
        return m ? [Number(m[1]), Number(m[2] || 0), Number(m[3] || 0)] : null;
      }
    }
    if (!dir) return null;
    dir = dir.includes('/') ? dir.slice(0, dir.lastIndexOf('/')) : '';
  }
}

// yamlUnsafe reports whether the repository's js-yaml is before version 4,
// whose load() builds JavaScript functions and regular expressions.
function yamlUnsafe(A, file) {
  // Unknown (no package.json says): load() was unsafe for most of its life.
  const v = depVersion(A, file || '', 'js-yaml');
  return v ? v[0] < 4 : true;
}

function jwtDecode(A, c, tok, what) {
  if (!S.live(tok, 'jwt-unverified')) return;
  // A decode next to a verify of the same function is reading a verified
  // token's header; alone, it trusts the claims unchecked.
  const fnNode = c.fr.clo ? c.fr.clo.node : null;
  const body = fnNode && fnNode.range ? c.fr.mod.code.slice(fnNode.range[0], fnNode.range[1]) : c.fr.mod.code;
  if (/\bverify\s*\(|jwtVerify\s*\(/.test(body)) return;
  // The token read from the request in this function: one handed over from
  // elsewhere (a store of verified tokens) is not judged here.
  const src = tok.t.tr.source();
  if (fnNode && (src.file !== c.fr.mod.path || src.line < fnNode.loc.start.line || src.line > fnNode.loc.end.line)) return;
  S.sink(A, 'jwt-unverified', c.node, c.fr, tok, what, { msg: `${tok.t.tr.source().text} is decoded by ${what} and its claims used without verifying the signature (JWT not verified)` });
}

// jwtVerify checks jsonwebtoken's verify and reports whether it lets a
// forged token through: a release before 4.2.2 accepts unsigned ("none")
// tokens whatever the options; later ones only when no key is given.
function jwtVerify(A, c, what) {
  const opts = c.args[2] && c.args[2].props ? c.args[2] : null;
  const key = c.args[1];
  const v = depVersion(A, c.fr.mod.path, 'jsonwebtoken');
  if (v && (v[0] < 4 || (v[0] === 4 && (v[1] < 2 || (v[1] === 2 && v[2] < 2))))) {
    A.report('jwt-unverified', c.node, c.fr, null, what, { level: 'error', msg: `${what} of jsonwebtoken ${v.join('.')} accepts unsigned ("none") tokens (JWT not verified)` });
    return true;
  }
  const noKey = !key || (key.c !== undefined && !key.c && key.c !== 0) || key.undef;
  if (opts) {
    const algs = opts.props.get('algorithms');
    const none = algs && ((algs.consts && algs.consts.some((x) => String(x).toLowerCase() === 'none')) || (typeof algs.c === 'string' && algs.c.toLowerCase() === 'none'));
    if (none && noKey) {
      A.report('jwt-unverified', c.node, c.fr, null, what, { level: 'error', msg: `${what} accepts the "none" algorithm: unsigned tokens pass (JWT not verified)` });
      return true;
    }
    const ign = opts.props.get('ignoreExpiration');
    if (ign && ign.c === true) {
      A.report('jwt-unverified', c.node, c.fr, null, what, { level: 'warning', msg: `${what} ignores the token's expiry (ignoreExpiration: true) (JWT not verified)` });
      return false;
    }
  }
  if (key && (key.c === '' || key.c === null || key.c === false)) {
    A.report('jwt-unverified', c.node, c.fr, null, what, { level: 'error', msg: `${what} verifies with an empty key (JWT not verified)` });
    return true;
  }
  return false;
}

// ---- receivers ----

function contentTypeOf(v) {
  if (!v) return null;
  if (typeof v.c === 'string') return v.c;
  return UNKNOWN;
}

function resCall(A, c) {
  const res = c.recv, a = c.args, node = c.node, fr = c.fr, m = c.method;
  const what = calleeText(A, c);
  switch (m) {
    case 'status': case 'code': case 'vary': case 'append': case 'links': case 'attachment': case 'clearCookie': case 'removeHeader':
    case 'charset': case 'set': case 'header': case 'setHeader': case 'type': case 'contentType': case 'writeHead': case 'cookie':
    case 'location':
      break;
    default:
      break;
  }
  switch (m) {
    case 'status': case 'code': case 'vary': case 'append': case 'links': case 'attachment': case 'clearCookie': case 'removeHeader': case 'charset':
      return res;
    case 'set': case 'header': case 'setHeader': case 'headers': {
      if (a[0] && a[0].props && !a[0].t) {
        for (const [k, v] of a[0].props) headerSet(A, res, k, v, c, what);
      } else if (a[0] && typeof a[0].c === 'string') {
        headerSet(A, res, a[0].c, a[1] || new Val(), c, what);
      }
      return m === 'setHeader' ? new Val() : res;
    }
    case 'type': case 'contentType':
      res.ct = contentTypeOf(a[0]);
      return res;
    case 'writeHead': {
      const h = a[1] && a[1].props ? a[1] : a[2];
      if (h && h.props) for (const [k, v] of h.props) headerSet(A, res, k, v, c, what);
      return res;
    }
    case 'send': case 'write': case 'end': case 'sendBody': {
      const x = a[0];
      if (!x) return new Val();
      if (res.fastify && m === 'send') {
        if (res.ct && /html/i.test(res.ct) && S.xssValue(x)) S.sink(A, 'xss', node, fr, x, what);
        return new Val();
      }
      if (res.koa) return new Val();
      if ((m === 'write' || m === 'end') && res.ct === undefined) {
        // Node's own response: no Content-Type unless set; browsers sniff.
      }
      if (S.htmlType(res.ct) && S.xssValue(x)) S.sink(A, 'xss', node, fr, x, what);
      return new Val();
    }
    case 'json': case 'jsonp': case 'sendStatus':
      return new Val();
    case 'redirect': {
      const url = a.length >= 2 && (typeof a[0].c === 'number' || !a[0].t) ? a[1] : a[0];
      S.redirect(A, node, fr, url, what);
      return new Val();
    }
    case 'location':
      S.redirect(A, node, fr, a[0], what);
      return res;
    case 'render':
      return renderCall(A, c, res, what);
    case 'view':
      return renderCall(A, c, res, what);
    case 'sendFile': case 'sendfile': case 'download': {
      let opts = a[1];
      if (m === 'download' && a[1] && !a[1].props) opts = a[2];
      const root = opts && opts.props && opts.props.has('root');
      if (!root) S.sink(A, 'path-traversal', node, fr, a[0], what);
      invokeFns(A, c, () => [new Val()]);
      return new Val();
    }
    case 'cookie': {
      const name = a[0] && typeof a[0].c === 'string' ? a[0].c : null;
      S.cookie(A, node, fr, a[2], name, what, { secure: false, httpOnly: false });
      return res;
    }
    case 'response':
      return hapiCall(A, c);
    case 'on': case 'once':
      invokeFns(A, c, () => []);
      return res;
    default:
      return undefined;
  }
}

function headerSet(A, res, name, v, c, what) {
  const n = String(name).toLowerCase();
  if (n === 'location' || n === 'refresh') S.redirect(A, c.node, c.fr, v, what);
  else if (n === 'content-type') res.ct = contentTypeOf(v);
  else if (n === 'set-cookie' && (typeof v.c === 'string' || v.s)) {
    if (!/;\s*secure/i.test(typeof v.c === 'string' ? v.c : v.s)) A.report('insecure-cookie', c.node, c.fr, null, what, { level: 'warning', cwe: ['614'], msg: `${what} sets a cookie without the secure flag (CWE-614)` });
  }
}

function renderCall(A, c, res, what) {
  const a = c.args;
  const view = a[0] || new Val();
  S.sink(A, 'path-traversal', c.node, c.fr, view, what + ' (template name)');
  let locals = a[1] && !a[1].fn ? a[1] : null;
  invokeFns(A, c, () => [new Val(), new Val()]);
  if (typeof view.c !== 'string') return new Val();
  if (!templates) templates = require('./templates');
  const merged = Val.of({ props: new Map(), kind: 'obj' });
  const resLocals = res.props && res.props.get('locals');
  if (resLocals && resLocals.props) for (const [k, v] of resLocals.props) merged.props.set(k, v);
  if (locals) {
    if (locals.props) for (const [k, v] of locals.props) merged.props.set(k, v);
    if (locals.spread) merged.spread = locals.spread;
    if (locals.t) merged.spread = locals;
    if (locals.elem && locals.kind !== 'arr') merged.elem = locals.elem;
  }
  templates.render(A, c, view.c, merged);
  return new Val();
}

function ctxCall(A, c) {
  const a = c.args, what = calleeText(A, c);
  switch (c.method) {
    case 'redirect':
      S.redirect(A, c.node, c.fr, a[0], what);
      return new Val();
    case 'render':
      return renderCall(A, c, c.recv, what);
    case 'set':
      if (a[0] && typeof a[0].c === 'string') headerSet(A, c.recv, a[0].c, a[1] || new Val(), c, what);
      else if (a[0] && a[0].props) for (const [k, v] of a[0].props) headerSet(A, c.recv, k, v, c, what);
      return new Val();
    case 'attachment': case 'throw': case 'assert':
      return new Val();
    default:
      return undefined;
  }
}

function hapiCall(A, c) {
  const a = c.args, what = calleeText(A, c);
  switch (c.method) {
    case 'redirect':
      S.redirect(A, c.node, c.fr, a[0], what);
      return Val.of({ kind: 'hresp' });
    case 'response':
      if (S.xssValue(a[0])) S.sink(A, 'xss', c.node, c.fr, a[0], what);
      return Val.of({ kind: 'hresp' });
    case 'view':
      return renderCall(A, c, c.recv, what);
    case 'state': {
      const name = a[0] && typeof a[0].c === 'string' ? a[0].c : null;
      S.cookie(A, c.node, c.fr, a[2], name, what, { secure: true, httpOnly: true });
      return new Val();
    }
    default:
      return undefined;
  }
}

function hapiReturn(A, v, node, fr) {
  if (S.xssValue(v) && v.str !== false) S.sink(A, 'xss', node, fr, v, 'the handler\'s response');
}

function reqCall(A, c) {
  if ((c.method === 'on' || c.method === 'once') && c.args[0] && ['data', 'end'].includes(c.args[0].c)) {
    for (const f of c.args) if (f && f.fn) A.invoke(f.fn, null, [sourceVal(A, 'request body chunk', c.node, c.fr, { })], c.node, c.fr, {});
    return new Val();
  }
  return undefined;
}

function appCall(A, c) {
  const m = c.method;
  if (m === 'route' && c.args[0] && c.args[0].props) {
    // hapi and fastify: route({ method, path, handler }).
    const h = c.args[0].props.get('handler');
    if (h && h.fn) A.invoke(h.fn, null, routeArgs(h), c.node, c.fr, { entry: true });
    const opts = c.args[0].props.get('options') || c.args[0].props.get('config');
    const h2 = opts && opts.props && opts.props.get('handler');
    if (h2 && h2.fn) A.invoke(h2.fn, null, routeArgs(h2), c.node, c.fr, { entry: true });
    return kindVal('app');
  }
  if (HTTP_VERBS.has(m) || m === 'router' || m === 'register' || m === 'addHook') {
    invokeFns(A, c, (f) => routeArgs(f));
    return kindVal('app');
  }
  if (m === 'engine') return new Val();
  invokeFns(A, c, () => []);
  return kindVal('app');
}

function kcookiesCall(A, c) {
  if (c.method === 'get') return sourceVal(A, A.src(c.node, c.fr), c.node, c.fr, { str: true });
  if (c.method === 'set') {
    const name = c.args[0] && typeof c.args[0].c === 'string' ? c.args[0].c : null;
    S.cookie(A, c.node, c.fr, c.args[2], name, calleeText(A, c), { secure: null, httpOnly: true });
    return new Val();
  }
  return undefined;
}

function rlCall(A, c) {
  if (c.method === 'question') {
    const input = () => sourceVal(A, 'terminal input', c.node, c.fr, { str: true }, true);
    let found = false;
    for (const f of c.args) if (f && f.fn) { found = true; A.invoke(f.fn, null, [input()], c.node, c.fr, {}); }
    return found ? new Val() : input();
  }
  return emitterSource(A, c, true);
}

function emitterSource(A, c, local) {
  if (c.method === 'on' || c.method === 'once' || c.method === 'addListener') {
    const ev = c.args[0] && c.args[0].c;
    const srcEv = ['line', 'data', 'message', 'readable'].includes(ev);
    for (const f of c.args) {
      if (f && f.fn) A.invoke(f.fn, null, srcEv ? [sourceVal(A, local ? 'terminal input' : `${ev} message`, c.node, c.fr, { str: ev === 'line' }, local)] : [], c.node, c.fr, {});
    }
    return c.recv;
  }
  if (c.method === 'read') return sourceVal(A, 'terminal input', c.node, c.fr, {}, local);
  return undefined;
}

function socketCall(A, c) {
  return undefined;
}

function ldapCall(A, c) {
  if (c.method === 'search' && c.args[1]) {
    const o = c.args[1];
    const f = o.props ? o.props.get('filter') : o;
    if (f) S.sink(A, 'ldap-injection', c.node, c.fr, f, calleeText(A, c));
    invokeFns(A, c, () => [new Val(), new Val()]);
    return new Val();
  }
  invokeFns(A, c, () => [new Val(), new Val()]);
  return undefined;
}

function jqCall(A, c) {
  if (['html', 'append', 'prepend', 'after', 'before', 'replaceWith', 'wrap', 'wrapAll', 'wrapInner', 'insertAfter', 'insertBefore'].includes(c.method)) {
    if (c.args[0] && !c.args[0].fn) S.sink(A, 'xss', c.node, c.fr, c.args[0], calleeText(A, c));
    return c.recv;
  }
  invokeFns(A, c, () => []);
  return c.recv;
}

function qbCall(A, c) {
  if (['where', 'andWhere', 'orWhere', 'having', 'andHaving', 'orHaving', 'orderBy', 'addOrderBy', 'groupBy', 'select', 'addSelect', 'innerJoin', 'leftJoin', 'setParameter'].includes(c.method)) {
    if (c.method !== 'setParameter') S.sql(A, c.node, c.fr, c.args[0], calleeText(A, c), false);
    return c.recv;
  }
  return c.recv;
}

// ---- generic methods ----

const RAW_METHODS = new Set(['whereRaw', 'orWhereRaw', 'andWhereRaw', 'havingRaw', 'orderByRaw', 'groupByRaw', 'joinRaw', 'fromRaw',
  '$queryRawUnsafe', '$executeRawUnsafe', 'queryRawUnsafe', 'executeRawUnsafe']);
const SQL_METHODS = new Set(['query', 'execute', 'raw', 'whereRaw', 'orWhereRaw', 'andWhereRaw', 'havingRaw', 'orderByRaw', 'groupByRaw', 'joinRaw', 'fromRaw',
  '$queryRawUnsafe', '$executeRawUnsafe', 'queryRaw', 'executeRaw', 'unsafe', 'queryRawUnsafe']);
// Method names other APIs share (a Map's get): SQL only when the string reads like SQL.
const SQL_METHODS_TEXT = new Set(['run', 'all', 'get', 'each', 'exec', 'prepare', 'any', 'one', 'none', 'many', 'oneOrNone', 'manyOrNone',
  'result', 'multi', 'task', 'map', 'none', 'batch', 'iterate', 'pluck']);
const NOSQL_METHODS = new Set(['find', 'findOne', 'findOneAndUpdate', 'findOneAndDelete', 'findOneAndReplace', 'findOneAndRemove', 'updateOne',
  'updateMany', 'update', 'deleteOne', 'deleteMany', 'remove', 'count', 'countDocuments', 'aggregate', 'replaceOne', 'exists', 'distinct', 'findAndModify']);
const DB_NAME = /(db|database|conn|connection|client|pool|mysql|pg|pgp|sqlite3?|sql|knex|sequelize|trx|tx|transaction|manager|repo|repository|queryrunner|datasource|prisma|postgres|mssql|oracle)$/i;
const NOT_NOSQL_RECV = /^(_|lodash|R|ramda|\$|jQuery|document|window|array|arr|list|items|elements|results|rows|this\.\w*s)$/;
const BOOL_METHODS = new Set(['includes', 'startsWith', 'endsWith', 'indexOf', 'lastIndexOf', 'test', 'localeCompare', 'charCodeAt', 'codePointAt',
  'search', 'some', 'every', 'findIndex', 'findLastIndex', 'hasOwnProperty', 'has', 'isArray', 'equals', 'isValid', 'compare']);
const STR_METHODS = new Set(['trim', 'trimStart', 'trimEnd', 'trimLeft', 'trimRight', 'toLowerCase', 'toUpperCase', 'toLocaleLowerCase',
  'toLocaleUpperCase', 'slice', 'substring', 'substr', 'padStart', 'padEnd', 'repeat', 'normalize', 'concat', 'charAt', 'at', 'toString',
  'valueOf', 'toJSON', 'replace', 'replaceAll', 'format', 'join', 'trimEnd', 'toFixed']);
const ARRAY_SAME = new Set(['filter', 'slice', 'sort', 'reverse', 'concat', 'flat', 'splice', 'toSorted', 'toReversed', 'fill', 'values']);
// Unknown methods whose result is built from their arguments.
const TRANSFORM = /^(format\w*|build\w*|join|concat|replace\w*|normalize|resolve|parse\w*|stringify|render\w*|compile|to[A-Z]\w*|trim\w*|slice|substr\w*|encode\w*|decode\w*|merge|extend|assign|clone|from|compose|wrap|template|sprintf|interpolate|append|prepend|add|push|unshift|set|with\w*|create\w*|make\w*|generate\w*|get(Query|Sql|Url|Path|Command|Cmd|Html)\w*|serialize|url|path|text|val|value|html|string)$/;
const CLEAN_RESULT = /^(hash\w*|compare\w*|verify\w*|count\w*|length|size|digest|sign|encrypt|decrypt|is[A-Z]\w*|has[A-Z]\w*|check\w*|validate\w*|log|info|warn|error|debug|trace|emit|send|status|end|save|insert\w*|delete\w*|destroy|remove\w*|update\w*|find\w*|fetch\w*|load\w*|select\w*|lookup|exists)$/;

function methodCall(A, c) {
  const m = c.method, recv = c.recv, a = c.args, node = c.node, fr = c.fr;
  const rname = recvName(c.recvNode);
  const what = calleeText(A, c);
  // Route registration on an app or router not seen being created.
  if (HTTP_VERBS.has(m) && /^(app|router|api|server|routes?|r|fastify|apiRouter|authRouter|userRouter|\w+Router|\w+Routes)$/.test(rname) && a.some((x) => x && x.fn) && m !== 'on') {
    return appCall(A, c);
  }
  // A response object known only by its name.
  if (/^(res|response|resp)$/.test(rname) && !recv.kind && !recv.props) {
    const r = resCall(A, { ...c, recv: kindVal('res') });
    if (r !== undefined) return r && r.kind === 'res' ? recv : r;
  }
  if (/^(ctx|context)$/.test(rname) && !recv.kind && (m === 'redirect' || m === 'render')) return ctxCall(A, { ...c, recv: kindVal('ctx') });
  if (rname === 'h' && !recv.kind && (m === 'redirect' || m === 'response' || m === 'view')) return hapiCall(A, c);
  // SQL.
  if (SQL_METHODS.has(m) || SQL_METHODS_TEXT.has(m)) {
    const dbish = recv.kind === 'db' || DB_NAME.test(rname) || RAW_METHODS.has(m);
    // a query call of a database judged, its text untainted or not
    if (a[0] && !a[0].fn && (SQL_METHODS.has(m) ? (dbish || S.sqlText(a[0])) : S.sqlText(a[0]))) A.judge('sql-injection', node, fr);
    if (a[0] && !a[0].fn && S.live(a[0], 'sql-injection')) {
      if (SQL_METHODS.has(m) ? (dbish || S.sqlText(a[0])) : S.sqlText(a[0])) {
        // The query text given as {sql: ...} or {text: ...} too.
        S.sql(A, node, fr, a[0], what, false);
      }
    } else if (a[0] && a[0].props && SQL_METHODS.has(m)) {
      const q = a[0].props.get('sql') || a[0].props.get('text') || a[0].props.get('query');
      if (q && (dbish || S.sqlText(q))) S.sql(A, node, fr, q, what, false);
    }
    if (m === 'getConnection' || m === 'connect') invokeFns(A, c, () => [new Val(), kindVal('db')]);
    else invokeFns(A, c, () => [new Val(), new Val(), new Val()]);
    if (dbish) return m === 'get' && !S.sqlText(a[0] || new Val()) ? undefined : new Val();
  }
  if ((m === 'getConnection' || m === 'connect' || m === 'acquire') && (recv.kind === 'db' || DB_NAME.test(rname))) {
    invokeFns(A, c, () => [new Val(), kindVal('db'), new Val()]);
    return kindVal('db');
  }
  if (m === 'createQueryBuilder' || m === 'queryBuilder') return kindVal('qb');
  // Query builders chain (knex('t').select().where()).
  if (recv.kind === 'db' && !NOSQL_METHODS.has(m)) {
    invokeFns(A, c, () => [new Val(), new Val()]);
    return kindVal('db');
  }
  if (m === 'search' && /ldap/i.test(rname) && a[1]) return ldapCall(A, c);
  if (m === 'literal' && /sequelize/i.test(rname)) {
    S.sql(A, node, fr, a[0], what, false);
    return new Val();
  }
  // NoSQL.
  // update(values) with one argument is an ORM instance's (Sequelize), not a query.
  const ormUpdate = /^(update|replaceOne|updateOne|updateMany|findOneAndUpdate|findOneAndReplace)$/.test(m) && a.length < 2;
  if (NOSQL_METHODS.has(m) && !ormUpdate && a[0] && !a[0].fn && !NOT_NOSQL_RECV.test(rname) && !(recv.kind === 'arr')) {
    nosqlCall(A, c, what);
    invokeFns(A, c, () => [new Val(), new Val()]);
    return Val.of({ kind: 'cursor' });
  }
  if (m === 'where' && a[0] && S.live(a[0], 'nosql-injection') && a[0].str && !DB_NAME.test(rname) && recv.kind !== 'qb') {
    S.sink(A, 'nosql-injection', node, fr, a[0], what);
    return recv;
  }
  if ((m === 'mapReduce' || m === '$where') && a[0]) {
    S.sink(A, 'nosql-injection', node, fr, a[0], what, { deep: true });
  }
  // Template engines reached through an instance.
  if ((m === 'render' || m === 'compile' || m === 'renderString') && /^(ejs|pug|jade|handlebars|hbs|Handlebars|nunjucks|env|swig|mustache|Mustache|dot|doT|eta|liquid|engine)$/.test(rname)) {
    return templateCall(A, c, (rname.toLowerCase() === 'env' ? 'nunjucks' : rname.toLowerCase()) + '.' + m, what);
  }
  if ((m === 'evaluate' || m === 'eval' || m === 'compile') && /^(math|mathjs|parser|Parser|limitedEvaluate)$/.test(rname)) {
    S.sink(A, 'code-injection', node, fr, a[0], what);
    return new Val();
  }
  if (m === 'mv' && recv.t && a[0]) {
    // express-fileupload's move of an uploaded file.
    S.sink(A, 'path-traversal', node, fr, a[0], what);
    invokeFns(A, c, () => [new Val()]);
    return new Val();
  }
  if (/^(fromString|fromBuffer|parseXml|parseXmlString|parse)$/.test(m) && a[0] && a[1] && (a[1].noent || (a[1].props && [...a[1].props.values()].some((x) => x.noent)))) {
    // An XML parser told to substitute entities (XML_PARSE_NOENT).
    S.sink(A, 'xxe', node, fr, a[0], what + ' with entity substitution (NOENT)');
    return a[0].t ? derived(a[0], false) : new Val();
  }
  if (m === 'bypassSecurityTrustHtml' && a[0]) {
    // Angular's DomSanitizer told to trust input as HTML. (A value trusted
    // for another context is refused by an HTML binding.)
    S.sink(A, 'xss', node, fr, a[0], what);
    return a[0];
  }
  if ((m === 'subscribe' || m === 'pipe') && recv.t) {
    let out = recv;
    for (const f of a) if (f && f.fn) out = A.invoke(f.fn, null, [derived(recv, false)], node, fr, {}) || out;
    return m === 'pipe' ? recv : new Val();
  }
  if (m === 'insertAdjacentHTML' && a[1]) {
    S.sink(A, 'xss', node, fr, a[1], what);
    return new Val();
  }
  if ((m === 'write' || m === 'writeln') && rname === 'document') {
    for (const x of a) S.sink(A, 'xss', node, fr, x, what);
    return new Val();
  }
  if ((m === 'assign' || m === 'replace') && /(^|\.)location$/.test(rname)) {
    S.redirect(A, node, fr, a[0], what);
    return new Val();
  }
  if (m === 'setAttribute' && a[0] && typeof a[0].c === 'string') {
    const at = a[0].c.toLowerCase();
    if (at === 'srcdoc' || at.startsWith('on')) S.sink(A, 'xss', node, fr, a[1], what);
    return new Val();
  }
  // Promises and arrays call their callbacks.
  if (m === 'then') {
    let out = null;
    if (a[0] && a[0].fn) out = A.invoke(a[0].fn, null, [recv], node, fr, {});
    if (a[1] && a[1].fn) A.invoke(a[1].fn, null, [new Val()], node, fr, {});
    return out || new Val();
  }
  if (m === 'catch' || m === 'finally') {
    if (a[0] && a[0].fn) A.invoke(a[0].fn, null, [new Val()], node, fr, {});
    return recv;
  }
  if (['forEach', 'map', 'flatMap', 'filter', 'find', 'findLast', 'some', 'every', 'findIndex', 'reduce', 'reduceRight', 'sort'].includes(m) && a[0] && a[0].fn) {
    const el = A.elemOf(recv, node, fr);
    let out;
    if (m === 'reduce' || m === 'reduceRight') {
      const acc = a[1] || new Val();
      const r1 = A.invoke(a[0].fn, null, [acc, el, new Val(), recv], node, fr, {});
      out = join(acc, r1);
      return out;
    }
    const r = A.invoke(a[0].fn, null, m === 'sort' ? [el, el] : [el, new Val(), recv], node, fr, {});
    if (m === 'map' || m === 'flatMap') return Val.of({ kind: 'arr', elem: r });
    if (m === 'filter' || m === 'sort') return recv;
    if (m === 'find' || m === 'findLast') return el;
    return new Val();
  }
  // Event emitters: data from a socket or a request stream is input.
  if ((m === 'on' || m === 'once' || m === 'addEventListener') && a[0] && typeof a[0].c === 'string') {
    const ev = a[0].c;
    const sock = /^(ws|socket|sock|client|conn|connection|io|wss|channel|peer|port|worker|win|window|self)$/.test(rname) || recv.kind === 'socket';
    if (sock && !['connection', 'connect', 'open', 'close', 'error', 'disconnect', 'end', 'drain', 'listening', 'upgrade', 'headers'].includes(ev)) {
      for (const f of a) if (f && f.fn) A.invoke(f.fn, null, [sourceVal(A, `${rname}.on('${ev}') data`, node, fr, {}), sourceVal(A, `${rname}.on('${ev}') data`, node, fr, {})], node, fr, {});
      return recv;
    }
    if (sock && ev === 'connection') {
      for (const f of a) if (f && f.fn) A.invoke(f.fn, null, [kindVal('socket'), kindVal('req')], node, fr, {});
      return recv;
    }
  }
  // A regular expression's match of input is input.
  if (recv.kind === 'regex' && (m === 'exec' || m === 'match') && a[0] && a[0].t) {
    return Val.of({ kind: 'arr', elem: derived(a[0], true), t: a[0].t, s: TAINTED });
  }
  // An archive's entries (unzip, unzipper, tar streams): their names are the
  // archive's, which whoever made it chose.
  if ((m === 'on' || m === 'once') && a[0] && a[0].c === 'entry') {
    for (const f of a) if (f && f.fn) A.invoke(f.fn, null, [sourceVal(A, 'an archive entry', node, fr, { obj: true })], node, fr, {});
    return recv;
  }
  // Boolean and number results hold no input.
  if (m === 'test' && recv && recv.kind === 'regex' && node.arguments && node.arguments[0]) {
    // ok = EMAIL.test(x); if (ok) ...: the result carries what passing proves
    const mask = patternMask(recv.re);
    const k = mask ? exprKey(node.arguments[0]) || exprKey(node.arguments[0], fr.mod.code) : null;
    if (k) {
      const out = new Val();
      out.implied = [{ key: k, mask }];
      return out;
    }
  }
  if (BOOL_METHODS.has(m)) return new Val();
  // String methods.
  if (recv.t || recv.r || recv.str || typeof recv.c === 'string') {
    if (m === 'replace' || m === 'replaceAll') return replaceCall(A, c);
    if (m === 'split' || m === 'match' || m === 'matchAll' || m === 'entries' || m === 'keys') {
      const d = derived(recv, true);
      return Val.of({ kind: 'arr', elem: d, t: recv.t ? recv.t : null, s: recv.t ? TAINTED : null });
    }
    if (STR_METHODS.has(m)) {
      let v = recv.t || recv.r ? derived(recv, true) : Val.of({ str: true, s: UNKNOWN });
      if (recv.t) v.s = pieceText(recv, m);
      for (const x of a) {
        const t = deepTaint(x);
        if (t) {
          v.t = V.joinTaint(v.t, t);
          if (m !== 'concat') v.s = v.s || TAINTED;
          else v.s = V.clip(text(v) + TAINTED);
        }
      }
      if (recv.norm) v.norm = true;
      return v;
    }
  }
  if (recv.kind === 'arr' || recv.elem) {
    if (m === 'join') {
      const e = A.elemOf(recv, node, fr);
      const t = V.joinTaint(deepTaint(e), recv.t);
      return Val.of({ t, r: e.r, str: true, s: t ? TAINTED : null });
    }
    if (m === 'pop' || m === 'shift' || m === 'at') return A.elemOf(recv, node, fr);
    if (m === 'push' || m === 'unshift') {
      for (const x of a) recv.elem = recv.elem ? join(recv.elem, x) : x;
      return new Val();
    }
    if (ARRAY_SAME.has(m)) {
      if (m === 'concat') {
        const out = Val.of({ kind: 'arr', elem: recv.elem, t: recv.t });
        for (const x of a) out.elem = out.elem ? join(out.elem, x.kind === 'arr' ? A.elemOf(x, node, fr) : x) : x;
        return out;
      }
      return recv;
    }
  }
  if (recv.t || recv.r) {
    // Other methods of input (a FormData's get, a URL's searchParams.get).
    if (CLEAN_RESULT.test(m)) return new Val();
    return derived(recv, /^(text|getText|textContent|innerText|getAttribute|nodeValue|name|toISOString)$/.test(m));
  }
  return undefined;
}

function pieceText(recv, m) {
  if (['trim', 'trimStart', 'trimLeft', 'toLowerCase', 'toUpperCase', 'toLocaleLowerCase', 'toLocaleUpperCase', 'normalize', 'toString', 'valueOf', 'padEnd', 'trimEnd', 'trimRight'].includes(m)) return recv.s;
  return TAINTED;
}

// replaceCall models String.prototype.replace: replacing the characters
// HTML needs escaped with entities sanitizes for HTML; stripping "../" from
// a normalized path sanitizes a path; anything else keeps the taint.
function replaceCall(A, c) {
  const recv = c.recv, a = c.args;
  let v = recv.t || recv.r ? derived(recv, true) : Val.of({ str: true });
  if (recv.t) v.s = TAINTED;
  const pat = a[0] || new Val();
  const rep = a[1] || new Val();
  if (rep.t) v.t = V.joinTaint(v.t, rep.t);
  if (!v.t) return v;
  const reSrc = pat.re ? pat.re.pattern : (typeof pat.c === 'string' ? escapeRe(pat.c) : null);
  const global = pat.re ? pat.re.flags.includes('g') : c.method === 'replaceAll';
  if (reSrc !== null && typeof rep.c === 'string') {
    if (global && /^&(lt|gt|quot|#0?39|#x27|amp|#60|#62);?$/.test(rep.c) && /<|>|"|'/.test(reSrc)) {
      v.xssEsc = (recv.xssEsc || 0) | escBits(reSrc);
      if ((v.xssEsc & 3) === 3 || (v.xssEsc & 1)) v.t = v.t.sanitized(M('xss'));
    }
    if (recv.xssEsc) {
      v.xssEsc = (v.xssEsc || 0) | recv.xssEsc;
    }
    // Removing every character outside a small class: [^a-z0-9].
    if (global && rep.c === '' && /^\[\^[\w\\\-]*\]\+?$/.test(reSrc)) v.t = null;
    if (global && rep.c === '' && /\\\.\\\./.test(reSrc) && recv.norm) v.t = v.t ? v.t.sanitized(M('path-traversal')) : null;
  }
  if (recv.norm) v.norm = true;
  return v;
}

function escBits(src) {
  let b = 0;
  if (src.includes('<')) b |= 1;
  if (src.includes('>')) b |= 2;
  return b;
}

function escapeRe(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); }

function nosqlCall(A, c, what) {
  const a = c.args;
  S.nosql(A, c.node, c.fr, a[0], what);
  if (c.method === 'distinct' && a[1]) S.nosql(A, c.node, c.fr, a[1], what);
}

// recvName is a receiver's name for the name-based models: "db" for db,
// this.db and req.app.locals.db.
function recvName(n) {
  if (!n) return '';
  while (n.type === 'TSNonNullExpression' || n.type === 'TSAsExpression' || n.type === 'ChainExpression') n = n.expression;
  if (n.type === 'Identifier') return n.name;
  if (n.type === 'MemberExpression' && !n.computed && n.property.type === 'Identifier') {
    if (n.object.type === 'ThisExpression') return 'this.' + n.property.name;
    return n.property.name;
  }
  if (n.type === 'CallExpression') return recvName(n.callee);
  if (n.type === 'AwaitExpression') return recvName(n.argument);
  return '';
}

// unknownCall is a call of nothing the engine knows: its callbacks are
// walked, and its result carries its input's taint when it is a free
// function or a method that builds from its arguments.
function unknownCall(A, c) {
  const names = [];
  invokeFns(A, c, (f) => {
    const params = f.fn.node.params.map(paramName);
    return params.map((n, i) => {
      if (/^_?(req|request)$/i.test(n)) return kindVal('req');
      if (/^_?(res|response)$/i.test(n) && i > 0) return kindVal('res');
      if (/^(ctx)$/.test(n)) return kindVal('ctx');
      return new Val();
    });
  });
  void names;
  const name = c.method !== null && c.method !== undefined ? c.method : (c.callee.type === 'Identifier' ? c.callee.name : '');
  if (c.fn.kind === 'tplfn') return new Val();
  if (c.isNew && c.args.length === 1 && c.args[0] && c.args[0].props && c.argNodes[0] && c.argNodes[0].type === 'ObjectExpression') {
    // new Model({ name, email }) of a class not in view: an instance holding the fields it was given, each its own
    return Val.of({ props: new Map(c.args[0].props), kind: 'obj' });
  }
  if (CLEAN_RESULT.test(name)) return new Val();
  if (c.recv && c.method !== null) {
    if (c.recv.t) return derived(c.recv, false);
    if (!TRANSFORM.test(name)) return new Val();
  }
  const v = A.opaque(c.args);
  if (c.recv && c.recv.t) v.t = V.joinTaint(v.t, c.recv.t);
  return v;
}

// ---- assignments and literals ----

function propSink(A, obj, key, v, target, node, sc, fr) {
  if (key === 'innerHTML' || key === 'outerHTML' || key === 'srcdoc') {
    S.sink(A, 'xss', node, fr, v, A.src(target, fr));
    return;
  }
  if (obj.kind === 'session' || (!obj.kind && /(^|\.)session$/.test(A.src(target.object, fr)) && /^(req|request|ctx|this\.req)\./.test(A.src(target.object, fr)))) {
    S.sink(A, 'trust-boundary', node, fr, v, A.src(target, fr), { deep: true });
    return;
  }
  if ((obj.kind === 'req' || obj.kind === 'ctx') && key === 'session') {
    S.sink(A, 'trust-boundary', node, fr, v, A.src(target, fr), { deep: true });
    return;
  }
  if (obj.kind === 'ctx' && key === 'body') {
    const ct = obj.ct;
    const p = V.prefixOf(v);
    if (S.xssValue(v) && ((ct && /html/i.test(ct)) || (!ct && p !== null && (p === '' || p.trim().startsWith('<'))))) S.sink(A, 'xss', node, fr, v, A.src(target, fr));
    return;
  }
  if (obj.kind === 'ctx' && key === 'type') {
    obj.ct = contentTypeOf(v);
    return;
  }
  if ((obj.kind === 'g:location' || obj.kind === 'g:window.location' || obj.kind === 'g:document.location') && key === 'href') {
    S.redirect(A, node, fr, v, A.src(target, fr));
    return;
  }
  if ((obj.kind === 'g:window' || obj.kind === 'g:document') && key === 'location') {
    S.redirect(A, node, fr, v, A.src(target, fr));
    return;
  }
  if (obj.kind === 'res' && key === 'body' && obj.koa) {
    propSink(A, kindVal('ctx'), 'body', v, target, node, sc, fr);
  }
  if (v.r) bound(A, key, v, target, fr);
}

// propertyCheck looks at a field of an object literal: a $where built from
// input, an __html built from input, a secret named field from Math.random.
function propertyCheck(A, key, x, p, fr) {
  if ((key === '$where' || key === '$function' || key === '$accumulator') && S.live(x, 'nosql-injection')) {
    S.sink(A, 'nosql-injection', p, fr, x, `the ${key} query operator`, { deep: true });
  }
  if (key === '__html') S.sink(A, 'xss', p, fr, x, 'dangerouslySetInnerHTML');
  if (x.r) bound(A, key, x, p, fr);
}

const SECRET = /(^|_)(token|secret|password|passwd|pwd|passcode|passphrase|nonce|salt|otp|csrf|xsrf|apikey|api_key|auth_key|authkey|auth_code|session_id|sessionid|sid|session_key|reset_code|reset_key|verification_code|verify_code|activation_code|activation_key|invite_code|private_key|secret_key|access_key|signing_key|encryption_key|pin|hmac)(_|$)/i;

function snake(name) {
  return String(name).replace(/([a-z0-9])([A-Z])/g, '$1_$2').replace(/[-\s.]+/g, '_').toLowerCase();
}

// bound is called when a value is bound to a name: a weak random value
// named as a secret is a finding.
function bound(A, name, v, node, fr) {
  if (!v || !v.r || !name) return;
  if (!SECRET.test(snake(name.replace(/\(\)$/, '')))) return;
  // Reported once, where the random value is first named as a secret.
  let r = v.r;
  if (r.text === name && r.line === node.loc.start.line && r.prev) r = r.prev;
  for (let s = r; s && s.prev; s = s.prev) if (SECRET.test(snake(s.text.replace(/\(\)$/, '')))) return;
  A.report('weak-randomness', node, fr, Val.of({ r }), `${name}`, { level: 'warning', msg: `Math.random() makes ${name}, a value that must not be guessable (weak randomness)` });
}

function taggedTemplate(A, node, sc, fr) {
  const tag = A.src(node.tag, fr);
  const vals = node.quasi.expressions.map((e) => A.ev(e, sc, fr));
  if (/(^|\.)(sql|SQL|\$queryRaw|\$executeRaw|html|css|gql|graphql|Prisma\.sql)$/.test(tag)) return Val.of({ str: true, kind: 'sqltag' });
  if (/(^|\.)unsafe$/.test(tag)) {
    for (const v of vals) S.sql(A, node, fr, v, tag, false);
  }
  let v = Val.konst(node.quasi.quasis[0].value.cooked || '');
  for (let i = 0; i < vals.length; i++) v = V.concat(V.concat(v, flat(vals[i])), Val.konst(node.quasi.quasis[i + 1].value.cooked || ''));
  return v;
}

function dynamicImport(A, s, node, fr) {
  S.sink(A, 'code-injection', node, fr, s, 'import()');
}

function jsx(A, node, sc, fr) {
  const walk = (n) => {
    if (!n) return;
    if (n.type === 'JSXElement') {
      for (const at of n.openingElement.attributes) {
        if (at.type === 'JSXSpreadAttribute') { A.ev(at.argument, sc, fr); continue; }
        if (!at.value) continue;
        const name = at.name && (at.name.name || '');
        if (at.value.type === 'JSXExpressionContainer' && at.value.expression.type !== 'JSXEmptyExpression') {
          const v = A.ev(at.value.expression, sc, fr);
          if (name === 'srcDoc') S.sink(A, 'xss', at, fr, v, 'srcDoc');
          if (name === 'href' && S.live(v, 'xss') && V.prefixOf(v) === '') S.sink(A, 'xss', at, fr, v, 'href (a javascript: URL)', { level: 'warning' });
        } else if (at.value.type === 'JSXElement') {
          walk(at.value);
        }
      }
      for (const ch of n.children) walk(ch);
    } else if (n.type === 'JSXFragment') {
      for (const ch of n.children) walk(ch);
    } else if (n.type === 'JSXExpressionContainer') {
      if (n.expression.type !== 'JSXEmptyExpression') A.ev(n.expression, sc, fr);
    } else if (n.type === 'JSXSpreadChild') {
      A.ev(n.expression, sc, fr);
    }
  };
  walk(node);
  return Val.of({ kind: 'jsx' });
}

// ---- guards ----

function lookupFn(sc, name) {
  const s = sc.find(name);
  const v = s && s.vars.get(name);
  return v && v.fn ? v.fn : null;
}

// predicateMask is what a function of the program guarantees about its
// parameter i when it returns true: the checks it makes before it does
// (if (!CHECK(x)) return false; ... return true), or the check it returns
// (return CHECK(x)).
function predicateMask(A, clo, i) {
  const node = clo.node;
  if (!node.__pred) node.__pred = [];
  if (node.__pred[i] !== undefined) return node.__pred[i];
  node.__pred[i] = 0;
  const p = node.params[i];
  const name = p && p.type === 'Identifier' ? p.name : null;
  if (!name) return 0;
  const { Scope } = require('./analyze');
  const dummy = new Scope(null, true, 0);
  let mask = 0;
  const consider = (list) => {
    for (const g of list) if (g.key === name) mask |= g.mask;
  };
  if (node.body.type !== 'BlockStatement') {
    consider(guards(A, node.body, true, dummy, null));
  } else {
    for (const st of node.body.body) {
      if (st.type === 'IfStatement' && !st.alternate && exitsFalse(st.consequent)) consider(guards(A, st.test, false, dummy, null));
      if (st.type === 'ReturnStatement' && st.argument && !(st.argument.type === 'Literal')) consider(guards(A, st.argument, true, dummy, null));
    }
  }
  node.__pred[i] = mask;
  return mask;
}

// lookupMask is what a function of the program guarantees about its
// parameter i when it returns something (not null): a lookup that returns
// null unless the key is known (if (map.has(k)) return map.get(k); return null).
function lookupMask(A, clo, i) {
  const node = clo.node;
  if (!node.__lookup) node.__lookup = [];
  if (node.__lookup[i] !== undefined) return node.__lookup[i];
  node.__lookup[i] = 0;
  const p = node.params[i];
  const name = p && p.type === 'Identifier' ? p.name : null;
  if (!name || node.body.type !== 'BlockStatement') return 0;
  const body = node.body.body;
  const last = body[body.length - 1];
  const nullish = (e) => !e || (e.type === 'Literal' && e.value === null) || (e.type === 'Identifier' && e.name === 'undefined');
  if (!last || last.type !== 'ReturnStatement' || !nullish(last.argument)) return 0;
  const { Scope } = require('./analyze');
  const dummy = new Scope(null, true, 0);
  let mask = 0;
  for (const st of body.slice(0, -1)) {
    if (st.type === 'ReturnStatement') return 0;
    if (st.type !== 'IfStatement') continue;
    if (st.alternate) return 0;
    for (const g of guards(A, st.test, true, dummy, null)) if (g.key === name) mask |= g.mask;
  }
  node.__lookup[i] = mask;
  return mask;
}

// implied gives a call's result the narrowings its non-null value implies
// about the call's arguments (see lookupMask).
function implied(A, clo, ret, argNodes, fr) {
  if (!clo || !ret || !argNodes) return ret;
  let list = null;
  argNodes.forEach((n, i) => {
    const m = lookupMask(A, clo, i);
    if (!m) return;
    const k = exprKey(n) || exprKey(n, fr.mod.code);
    if (k) (list = list || []).push({ key: k, mask: m });
  });
  if (!list) return ret;
  const out = ret.copy();
  out.implied = list;
  return out;
}

function exitsFalse(st) {
  if (st.type === 'BlockStatement') return st.body.length > 0 && exitsFalse(st.body[st.body.length - 1]);
  if (st.type === 'ThrowStatement') return true;
  return st.type === 'ReturnStatement' && (!st.argument || (st.argument.type === 'Literal' && !st.argument.value));
}

const ALLOW_FN = /^(is|has)?_?(valid|safe|allowed|whitelisted|permitted|trusted|sanitized|clean|legal)\w*$|^(validate|check|verify|assert)[A-Z_]\w*$|^is(Valid|Safe|Allowed|Whitelisted|Permitted|Trusted|In)\w*$/;
// Validators that leave only a strict character set: a value they accept
// is safe in any sink. Others (isEmail, isURL, isMobilePhone) at least make
// it a string.
const VALIDATOR_OK = /^is(Int|Numeric|Alphanumeric|Alpha|UUID|MongoId|Hexadecimal|Boolean|In|Float|Decimal|Hash|ISO8601|Date|Port|Slug|Hex|Number|Integer|SafeInteger|Finite|Time|Octal|Ean|ISBN|IBAN|BIC|Semver|JWT|MD5|ISO31661Alpha2|ISO4217)$/;
const VALIDATOR_STR = /^is(Email|URL|MobilePhone|Ascii|Length|FQDN|IP|IPRange|Base64|DataURI|MimeType|Locale|Currency|PostalCode|Whitelisted|Lowercase|Uppercase|Empty|JSON|Strong\w*)$/;

// patternMask is what a string's passing an anchored pattern proves, for a
// pattern the plain anchored check (no wildcard, no alternation) refuses
// because its character classes hold '.' or '|' (an e-mail address): no
// operator object passes one that "[object Object]" fails (NoSQL), and
// none with '<' or '>' passes one that admits neither (XSS).
function patternMask(re) {
  if (!re || typeof re.pattern !== 'string' || /m/.test(re.flags || '')) return 0;
  const src = re.pattern;
  if (!/^\^/.test(src) || !/[^\\]\$$/.test(src)) return 0;
  const outside = src.replace(/\\./g, 'x').replace(/\[(?:\\.|[^\]\\])*\]/g, 'C');
  if (/[|.]/.test(outside)) return 0;
  let mask = 0;
  try {
    if (!new RegExp(src, re.flags || '').test('[object Object]')) mask |= M('nosql-injection');
  } catch {
    return 0;
  }
  if (!/[<>]|\\[SWDsbB]|\[\^/.test(src)) mask |= M('xss');
  return mask;
}

// regexOf is the pattern a regular expression literal or a name bound to one holds.
function regexOf(n, sc) {
  if (n.type === 'Literal' && n.regex) return n.regex;
  if (n.type === 'Identifier' && sc) {
    const s = sc.find(n.name);
    const v = s && s.vars.get(n.name);
    if (v && v.kind === 'regex' && v.re) return v.re;
  }
  return null;
}

// guards returns the narrowings a condition gives when it is sense (true or
// false): the expressions it checks against an allow-list or a pattern.
function guards(A, t, sense, sc, fr) {
  const out = [];
  const add = (n, mask) => {
    const k = exprKey(n) || (fr ? exprKey(n, fr.mod.code) : null);
    if (k) out.push({ key: k, mask });
    // new URL(x).hostname === 'a': x too.
    if (n.type === 'NewExpression' && n.arguments[0]) add(n.arguments[0], mask);
    if (n.type === 'CallExpression' && n.callee.type === 'MemberExpression' && ['trim', 'toLowerCase', 'toUpperCase', 'toString'].includes(n.callee.property.name)) add(n.callee.object, mask);
  };
  const hostOf = (n) => {
    if (n.type === 'MemberExpression' && !n.computed && ['hostname', 'host', 'origin', 'protocol'].includes(n.property.name)) return n.object;
    return null;
  };
  const impliedBy = (n) => {
    if (n.type !== 'Identifier') return;
    const s = sc.find(n.name);
    const v = s && s.vars.get(n.name);
    if (v && v.implied) for (const g of v.implied) out.push(g);
  };
  switch (t.type) {
    case 'Identifier':
      if (sense) impliedBy(t);
      return out;
    case 'UnaryExpression':
      if (t.operator === '!') return guards(A, t.argument, !sense, sc, fr);
      return out;
    case 'LogicalExpression':
      if ((t.operator === '&&' && sense) || (t.operator === '||' && !sense)) {
        return guards(A, t.left, sense, sc, fr).concat(guards(A, t.right, sense, sc, fr));
      }
      return out;
    case 'BinaryExpression': {
      const eq = t.operator === '===' || t.operator === '==';
      const ne = t.operator === '!==' || t.operator === '!=';
      const nullish = (e) => (e.type === 'Literal' && e.value === null) || (e.type === 'Identifier' && e.name === 'undefined');
      if ((eq && !sense) || (ne && sense)) {
        if (nullish(t.right)) impliedBy(t.left);
        else if (nullish(t.left)) impliedBy(t.right);
      }
      if ((eq && sense) || (ne && !sense)) {
        for (const [x, y] of [[t.left, t.right], [t.right, t.left]]) {
          if (y.type === 'Literal' && y.value !== null && !(x.type === 'UnaryExpression')) {
            add(x, ALL);
            const h = hostOf(x);
            if (h) add(h, HOST_SAFE);
          }
          if (x.type === 'UnaryExpression' && x.operator === 'typeof' && y.type === 'Literal') {
            if (['number', 'boolean', 'bigint'].includes(y.value)) add(x.argument, ALL);
            if (y.value === 'string') add(x.argument, M('nosql-injection'));
          }
          if (y.type === 'Identifier' && /^[A-Z][A-Z0-9_]+$/.test(y.name) && x.type !== 'Literal') add(x, ALL);
        }
      }
      // list.indexOf(x) !== -1, x.indexOf('..') === -1
      const idx = (n) => n.type === 'CallExpression' && n.callee.type === 'MemberExpression' && !n.callee.computed && n.callee.property.name === 'indexOf' ? n : null;
      const call = idx(t.left) || idx(t.right);
      if (call && call.arguments[0]) {
        const other = call === t.left ? t.right : t.left;
        const num = other.type === 'Literal' ? other.value : (other.type === 'UnaryExpression' && other.operator === '-' && other.argument.type === 'Literal' ? -other.argument.value : null);
        let found = null;
        if (num === -1) found = ne || (t.operator === '>' && call === t.left) ? true : eq ? false : null;
        else if (num === 0 && (t.operator === '>=' && call === t.left)) found = true;
        if (found !== null) {
          const arg = call.arguments[0];
          if (arg.type === 'Literal' && typeof arg.value === 'string') {
            if (found !== sense && /\.\.|\//.test(arg.value)) add(call.callee.object, M('path-traversal'));
          } else if (found === sense) {
            add(arg, ALL);
          }
        }
      }
      return out;
    }
    case 'CallExpression': {
      const cal = t.callee;
      if (cal.type === 'MemberExpression' && !cal.computed) {
        const m = cal.property.name;
        const arg = t.arguments[0];
        if (['includes', 'has', 'hasOwnProperty', 'contains', 'hasOwn'].includes(m) && arg) {
          if (arg.type === 'Literal' && typeof arg.value === 'string') {
            // x.includes('..'): false means no parent step in x.
            if (!sense && /\.\.|\//.test(arg.value)) add(cal.object, M('path-traversal'));
          } else if (sense) {
            add(arg, ALL);
            const h = hostOf(arg);
            if (h) add(h, HOST_SAFE);
          }
          return out;
        }
        if (m === 'hasOwn' && cal.object.type === 'Identifier' && cal.object.name === 'Object' && t.arguments[1] && sense) {
          add(t.arguments[1], ALL);
          return out;
        }
        if (m === 'startsWith' && arg && sense) {
          add(cal.object, HOST_SAFE);
          return out;
        }
        if ((m === 'test' || m === 'match') && arg) {
          const reNode = m === 'test' ? cal.object : arg;
          const subject = m === 'test' ? arg : cal.object;
          const named = reNode.type === 'Identifier' ? regexOf(reNode, sc) : null;
          if (named && sense) {
            const mask = patternMask(named);
            if (mask) add(subject, mask);
          }
          if (reNode.type === 'Literal' && reNode.regex) {
            const pm = patternMask(reNode.regex);
            if (pm && sense) add(subject, pm);
            const src = reNode.regex.pattern;
            const anchored = /^\^/.test(src) && /\$$/.test(src) && !/(^|[^\\])\.(?![^[]*\])/.test(src.slice(1, -1)) && !/\|/.test(src);
            if (anchored && sense) add(subject, ALL);
            if (/^\[\^[^\]]*\][+*]?$/.test(src) && !sense) add(subject, ALL);
            if (/\\\.\\\./.test(src) && !sense) add(subject, M('path-traversal'));
            // !/^(\w+:)?[/\\]{2}/.test(x): x neither starts with a scheme nor with //.
            if (/^\^/.test(src) && /\[\/\\\\\]\{2\}|\\\/\\\/|\/\//.test(src) && !sense) add(subject, HOST_SAFE);
          }
          return out;
        }
        if (VALIDATOR_OK.test(m) && sense && arg) {
          add(arg, ALL);
          return out;
        }
        if (VALIDATOR_STR.test(m) && sense && arg) {
          add(arg, M('nosql-injection'));
          return out;
        }

        if (m === 'isURL' && sense && arg && t.arguments[1]) {
          add(arg, HOST_SAFE);
          return out;
        }
      } else if (cal.type === 'Identifier') {
        const arg = t.arguments[0];
        if (!arg) return out;
        if (cal.name === 'isNaN' && !sense) add(arg, ALL);
        else if (VALIDATOR_OK.test(cal.name) && sense) add(arg, ALL);
      }
      // A predicate of the program: what its own checks guarantee when it
      // returns true; one of a package: what its name promises.
      if (sense && (cal.type === 'Identifier' || cal.type === 'MemberExpression')) {
        const f = cal.type === 'Identifier' ? lookupFn(sc, cal.name) : null;
        if (f) {
          t.arguments.forEach((arg, i) => {
            const mask = predicateMask(A, f, i);
            if (mask) add(arg, mask);
          });
        } else {
          const name = cal.type === 'Identifier' ? cal.name : (!cal.computed && cal.property.name) || '';
          if (ALLOW_FN.test(name) && t.arguments[0] && !(cal.type === 'MemberExpression' && VALIDATOR_STR.test(name))) add(t.arguments[0], ALL);
        }
      }
      return out;
    }
    case 'BinaryExpression_in':
      return out;
    default:
      return out;
  }
}

module.exports = {
  syntaxSource, global, prop, call, unknownCall, propSink, propertyCheck, taggedTemplate, dynamicImport, jsx, guards, entryArgs, entryFrame,
  instanceOf, superCall, elem, packageVal, hapiReturn, bound, sourceVal, kindVal, renderCall, SECRET, snake, implied,
};
