'use strict';
// Which files the engine reads: the walk of the tree, and the recognition of
// minified and bundled code by its content (it is not source anyone reviews,
// and its findings would be noise).

const fs = require('fs');
const path = require('path');

const SOURCE_EXT = new Set(['.js', '.jsx', '.mjs', '.cjs', '.ts', '.tsx', '.mts', '.cts']);
const TEMPLATE_EXT = new Set(['.ejs', '.hbs', '.handlebars', '.html', '.htm']);
// Directories the walk never enters: dependencies, build output, VCS data.
const SKIP_DIRS = new Set(['node_modules', '.git', '.hg', '.svn', 'bower_components', 'jspm_packages',
  'dist', 'build', 'out', '.next', '.nuxt', 'coverage', '.cache', 'vendor', 'vendors', 'third_party',
  'third-party', '.yarn', '.pnpm-store']);
const MAX_WALK = 20000;

function isSource(p) { return SOURCE_EXT.has(path.extname(p).toLowerCase()) && !p.endsWith('.d.ts'); }
function isTemplate(p) { return TEMPLATE_EXT.has(path.extname(p).toLowerCase()); }

// walk lists the source and template files under root (relative paths,
// sorted), at most MAX_WALK; symbolic links are not followed.
function walk(root) {
  const out = [];
  const stack = [''];
  while (stack.length && out.length < MAX_WALK) {
    const dir = stack.pop();
    let ents;
    try {
      ents = fs.readdirSync(path.join(root, dir), { withFileTypes: true });
    } catch {
      continue;
    }
    ents.sort((a, b) => (a.name < b.name ? 1 : a.name > b.name ? -1 : 0));
    for (const e of ents) {
      const rel = dir ? dir + '/' + e.name : e.name;
      if (e.isDirectory()) {
        if (!SKIP_DIRS.has(e.name)) stack.push(rel);
      } else if (e.isFile() && (isSource(rel) || isTemplate(rel))) {
        out.push(rel);
      }
    }
  }
  return out.sort();
}

// Bundlers' runtimes, as they appear in code they emit (a mention of the
// names, in a string or a regular expression, is not one).
const BUNDLER = /function __webpack_require__\(|__webpack_require__\.[a-zA-Z]+\s*=|^\/\*{6}\/ |\bparcelRequire\s*=|__turbopack_[a-z_]+__\(|^System\.register\(|\b__vite__mapDeps\s*=|\brequire=function\(\)\{function [a-z]\(/m;

// generated says why a file's content is minified or bundled code, or ''.
// It looks at the line-length distribution, the share of one- and two-letter
// identifiers, and bundler signatures.
function generated(code, name) {
  if (/\.min\.[cm]?js$/i.test(name) || /[.-]bundle\.[cm]?js$/i.test(name)) return 'minified (by its name)';
  if (code.length < 1024) return '';
  const head = code.length > 262144 ? code.slice(0, 262144) : code;
  if (BUNDLER.test(head)) return 'bundled (a bundler\'s runtime)';
  // A library copied in: a licence banner on top of a large file.
  if (code.length > 65536 && /^\s*\/\*[!*][\s\S]{0,1500}?(@license|\(c\)|copyright)[\s\S]{0,1500}?\*\//i.test(code.slice(0, 4096)) &&
      /@license|^\s*\/\*!/i.test(code.slice(0, 4096))) {
    return 'vendored (a library\'s licence banner on a large file)';
  }
  const lines = head.split('\n');
  let nonEmpty = 0, long = 0, longBytes = 0;
  for (const l of lines) {
    if (l.trim() === '') continue;
    nonEmpty++;
    if (l.length > 300) { long++; longBytes += l.length; }
  }
  const avg = head.length / Math.max(1, nonEmpty);
  if (avg > 150) return `minified (average line ${Math.round(avg)} bytes)`;
  if (longBytes > head.length / 2 && long > 0) return `minified (${long} lines over 300 bytes hold most of it)`;
  // Mangled names: most identifiers one or two letters long.
  const ids = head.slice(0, 65536).match(/[A-Za-z_$][\w$]*/g) || [];
  if (ids.length > 400) {
    let short = 0;
    for (const id of ids) if (id.length <= 2) short++;
    if (short / ids.length > 0.55 && avg > 60) return `minified (${Math.round(100 * short / ids.length)}% one- or two-letter names)`;
  }
  return '';
}

module.exports = { walk, generated, isSource, isTemplate, SKIP_DIRS };
