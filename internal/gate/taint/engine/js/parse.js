'use strict';
// Parsing: espree (ESLint's parser) for JavaScript and JSX, typescript-estree
// for TypeScript (and for JavaScript espree rejects), both from the image's
// npm directory. Both give ESTree with 1-based lines and 0-based columns.

const path = require('path');
const { createRequire } = require('module');

let modulesDir = '/opt/aster/eslint/node_modules';
let espree = null;
let tsEstree = null;

function setModulesDir(dir) { modulesDir = dir; espree = null; tsEstree = null; }

function load(name) {
  return createRequire(path.join(modulesDir, 'aster-taint.js'))(name);
}

function getEspree() {
  if (!espree) espree = load('espree');
  return espree;
}

function getTS() {
  if (!tsEstree) tsEstree = load('@typescript-eslint/typescript-estree');
  return tsEstree;
}

const TS_EXT = new Set(['.ts', '.tsx', '.mts', '.cts']);
const JS_EXT = new Set(['.js', '.jsx', '.mjs', '.cjs']);

// TooDeep is thrown for input nested past what the parser's stack takes.
class TooDeep extends Error {}

function isStackError(e) {
  return e instanceof RangeError || /stack space|call stack/i.test(String(e && e.message));
}

// parse returns the Program of a JavaScript or TypeScript source, or throws a
// SyntaxError (or TooDeep).
function parse(code, file) {
  try {
    return parse1(code, file);
  } catch (e) {
    if (e instanceof TooDeep) throw e;
    // A fragment (a snippet cut off before its closing braces, or methods
    // without their class): the same code completed, its lines unchanged.
    for (const fix of [(c) => c + '\n}', (c) => c + '\n}\n}', (c) => c + '\n}\n}\n}', (c) => 'class AsterFragment { ' + c + '\n}']) {
      try {
        const fixed = fix(code);
        const ast = parse1(fixed, file);
        ast.__code = fixed;
        return ast;
      } catch (e2) {
        if (e2 instanceof TooDeep) throw e2;
      }
    }
    throw e;
  }
}

function parse1(code, file) {
  const ext = path.extname(file).toLowerCase();
  if (TS_EXT.has(ext)) return parseTS(code, ext === '.tsx');
  const es = getEspree();
  const base = { ecmaVersion: 'latest', loc: true, range: true, ecmaFeatures: { jsx: true } };
  let first;
  for (const sourceType of ext === '.cjs' ? ['commonjs', 'module'] : ['module', 'commonjs']) {
    try {
      return es.parse(code, { ...base, sourceType });
    } catch (e) {
      if (isStackError(e)) throw new TooDeep('too deeply nested to parse');
      first = first || e;
    }
  }
  // Flow or TypeScript-like syntax in a .js file: the TypeScript parser is
  // more forgiving.
  try {
    return parseTS(code, true);
  } catch (e) {
    if (e instanceof TooDeep) throw e;
  }
  throw first;
}

function parseTS(code, jsx) {
  try {
    return getTS().parse(code, { loc: true, range: true, jsx, comment: false, tokens: false, errorOnUnknownASTType: false });
  } catch (e) {
    if (isStackError(e)) throw new TooDeep('too deeply nested to parse');
    throw e;
  }
}

// parseScript parses generated JavaScript (a compiled template).
function parseScript(code) {
  try {
    return getEspree().parse(code, { ecmaVersion: 'latest', sourceType: 'script', loc: true, range: true, ecmaFeatures: { globalReturn: true } });
  } catch (e) {
    if (isStackError(e)) throw new TooDeep('too deeply nested to parse');
    throw e;
  }
}

// preload loads the parser a file needs, so that loading TypeScript (about a
// second) is not charged to the first TypeScript file's budget.
function preload(file) {
  if (TS_EXT.has(path.extname(file).toLowerCase())) getTS();
  else getEspree();
}

module.exports = { parse, parseScript, setModulesDir, preload, TooDeep, TS_EXT, JS_EXT, isStackError };
