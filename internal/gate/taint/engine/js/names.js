'use strict';
// Package names as the models know them: aliases and forks of one API map
// to one name, "node:" prefixes and sub-paths are folded.

const ALIASES = {
  'fs-extra': 'fs', 'graceful-fs': 'fs', 'original-fs': 'fs', 'fs/promises': 'fs.promises', 'mz/fs': 'fs',
  'mysql2': 'mysql', 'mysql2/promise': 'mysql', 'promise-mysql': 'mysql', 'serverless-mysql': 'mysql',
  'pg-promise': 'pg', 'postgres': 'pg', 'pg-pool': 'pg',
  'sqlite3': 'sqlite', 'better-sqlite3': 'sqlite', 'sqlite': 'sqlite', 'node:sqlite': 'sqlite',
  'child-process-promise': 'child_process', 'child_process': 'child_process', 'promisify-child-process': 'child_process',
  'libxmljs2': 'libxmljs', 'libxmljs': 'libxmljs',
  'isomorphic-dompurify': 'dompurify', 'dompurify': 'dompurify',
  'express-mongo-sanitize': 'mongo-sanitize',
  '@hapi/hapi': 'hapi', 'jade': 'pug',
  'lodash.escape': 'lodash.escape', 'lodash-es': 'lodash', 'underscore': 'lodash',
  'readline/promises': 'readline', 'node-fetch': 'fetch', 'cross-fetch': 'fetch', 'isomorphic-fetch': 'fetch', 'undici': 'undici',
  'jsonwebtoken': 'jsonwebtoken', 'escape-html': 'escape-html', 'html-escaper': 'html-escaper',
  'vm2': 'vm2', 'next/navigation': 'next/navigation', 'next/server': 'next/server', 'shelljs': 'shelljs',
  'express-handlebars': 'express-handlebars', 'hbs': 'handlebars', 'handlebars': 'handlebars',
  'mathjs': 'mathjs', 'expr-eval': 'expr-eval', 'js-yaml': 'js-yaml', 'node-serialize': 'node-serialize',
  'serialize-to-js': 'serialize-to-js', 'funcster': 'funcster', 'cryo': 'cryo',
  'validator/lib/escape': 'validator.escape', 'validator/lib/toInt': 'validator.toInt',
};

function norm(spec) {
  let s = spec.startsWith('node:') ? spec.slice(5) : spec;
  if (ALIASES[spec]) return ALIASES[spec];
  if (ALIASES[s]) return ALIASES[s];
  if (s.startsWith('lodash/')) return 'lodash.' + s.slice(7);
  return s;
}

module.exports = { norm };
