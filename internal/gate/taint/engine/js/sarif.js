'use strict';
// The SARIF 2.1.0 log the engine writes: one run of "aster-taint", a rule per
// category (aster.taint.<category>, with its CWE as a tag), a result per
// finding with the sink as its location and the path as its code flow.

const { NAMES } = require('./sinks');

const CWE = {
  'sql-injection': 89, 'nosql-injection': 943, 'command-injection': 78, 'code-injection': 94, 'path-traversal': 22,
  'open-redirect': 601, 'xss': 79, 'template-injection': 1336, 'ldap-injection': 90, 'xpath-injection': 643, 'xxe': 611,
  'insecure-deserialization': 502, 'ssrf': 918, 'trust-boundary': 501, 'insecure-cookie': 614, 'jwt-unverified': 347,
  'weak-randomness': 330,
};

const HELP = {
  'sql-injection': 'Input reaches an SQL query built as a string. Pass it as a parameter (db.query(sql, [value])).',
  'nosql-injection': 'Input reaches a MongoDB query as an object (an attacker sends {"$ne": null}) or as $where code. Cast it to a string or sanitize it (mongo-sanitize); never build $where from input.',
  'command-injection': 'Input reaches a shell command. Use execFile/spawn with an argument array and no shell.',
  'code-injection': 'Input is evaluated as code (eval, Function, vm, mathjs). Parse the data instead.',
  'path-traversal': 'Input names a file. Keep the basename, or resolve it and check it stays under the intended directory; use sendFile\'s root option.',
  'open-redirect': 'Input chooses where a redirect goes. Redirect to a path of this site or to an allow-listed host.',
  'xss': 'Input is written into HTML unescaped. Escape it, or use the template\'s escaping output (<%= %>, {{ }}).',
  'template-injection': 'Input is compiled as a template. Pass it as data to a fixed template.',
  'ldap-injection': 'Input is built into an LDAP filter. Escape it.',
  'xpath-injection': 'Input is built into an XPath expression. Use variables or escape it.',
  'xxe': 'XML is parsed with external entities on. Leave noent off.',
  'insecure-deserialization': 'Input is deserialized by a library that can run code (node-serialize, js-yaml before 4). Use JSON or a safe loader.',
  'ssrf': 'Input chooses the host the server sends a request to. Allow-list the hosts or fix the base URL.',
  'trust-boundary': 'Input is stored in the session, which the application then trusts. Validate it first.',
  'insecure-cookie': 'A cookie is set without the secure flag (sent over plain HTTP) or without httpOnly (readable by scripts).',
  'jwt-unverified': 'A JSON Web Token is trusted without verifying its signature, or accepts the "none" algorithm.',
  'weak-randomness': 'Math.random() is predictable; use crypto.randomBytes or crypto.randomUUID for secrets and tokens.',
};

function rules(cats) {
  return cats.map((c) => ({
    id: 'aster.taint.' + c,
    name: c,
    shortDescription: { text: NAMES[c] },
    fullDescription: { text: HELP[c] },
    help: { text: HELP[c] },
    defaultConfiguration: { level: ['insecure-cookie', 'weak-randomness'].includes(c) ? 'warning' : 'error' },
    properties: { tags: ['security', 'external/cwe/cwe-' + CWE[c]] },
  }));
}

function compare(a, b) {
  if (a.file !== b.file) return a.file < b.file ? -1 : 1;
  if (a.line !== b.line) return a.line - b.line;
  if (a.col !== b.col) return a.col - b.col;
  return a.cat < b.cat ? -1 : a.cat > b.cat ? 1 : 0;
}

// log builds the SARIF document. findings carry steps (source first, sink
// last); notes are {file, text, level}; props are the invocation's figures.
function log(findings, notes, props, version) {
  const list = findings.slice().sort(compare);
  const cats = [...new Set(list.map((f) => f.cat))].sort();
  const index = new Map(cats.map((c, i) => [c, i]));
  const results = list.map((f) => {
    const r = {
      ruleId: 'aster.taint.' + f.cat,
      ruleIndex: index.get(f.cat),
      level: f.level,
      message: { text: f.msg },
      locations: [{
        physicalLocation: {
          artifactLocation: { uri: f.file },
          region: { startLine: f.line, startColumn: f.col, endLine: f.endLine, endColumn: f.endCol },
        },
      }],
    };
    if (f.cwe && f.cwe.length) r.taxa = f.cwe.map((id) => ({ id, toolComponent: { name: 'CWE' } }));
    if (f.steps && f.steps.length > 0) {
      r.codeFlows = [{
        threadFlows: [{
          locations: f.steps.map((s) => ({
            location: {
              physicalLocation: { artifactLocation: { uri: s.file }, region: { startLine: s.line, startColumn: s.col } },
              message: { text: s.text },
            },
          })),
        }],
      }];
    }
    return r;
  });
  const seen = new Set();
  const notifications = [];
  for (const n of notes.slice().sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.text < b.text ? -1 : 1))) {
    const k = n.file + '\u0000' + n.text;
    if (seen.has(k)) continue;
    seen.add(k);
    notifications.push({
      level: n.level || 'note',
      message: { text: `taint: ${n.file} ${n.text}` },
      locations: [{ physicalLocation: { artifactLocation: { uri: n.file } } }],
    });
  }
  return {
    version: '2.1.0',
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    runs: [{
      tool: { driver: { name: 'aster-taint', semanticVersion: version, informationUri: 'https://github.com/asterhq/aster', rules: rules(cats) } },
      invocations: [{ executionSuccessful: true, toolExecutionNotifications: notifications, properties: props }],
      results,
    }],
  };
}

module.exports = { log, CWE, rules };
