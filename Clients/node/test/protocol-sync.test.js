// The client's surface must match Protocol/openrpc.json, and index.d.ts must match src/.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import * as client from '../src/index.js';
import { METHODS, Outbox } from '../src/index.js';
import { clientDir, openrpcPath } from './helpers.js';

// index.d.ts and the declaration files it re-exports (types/*.d.ts), read as one text.
const dtsFiles = ['index.d.ts', ...fs.readdirSync(path.join(clientDir, 'types')).map((f) => path.join('types', f))];
const dts = dtsFiles.map((f) => fs.readFileSync(path.join(clientDir, f), 'utf8')).join('\n');

function readOpenRpc() {
  assert.ok(fs.existsSync(openrpcPath), `${openrpcPath} does not exist`);
  const doc = JSON.parse(fs.readFileSync(openrpcPath, 'utf8'));
  assert.ok(Array.isArray(doc.methods), 'openrpc.json has no methods array');
  return doc;
}

/** Body of `export declare class Outbox { ... }` in index.d.ts. */
function outboxClassBody() {
  const start = dts.indexOf('export declare class Outbox {');
  assert.ok(start >= 0, 'index.d.ts declares class Outbox');
  const end = dts.indexOf('\n}\n', start);
  return dts.slice(start, end);
}

/** Property names of an interface in index.d.ts, following `extends`. */
function interfaceProps(name) {
  const match = new RegExp(`interface ${name}(?: extends ([\\w, ]+))? \\{\\n([\\s\\S]*?)\\n\\}`).exec(dts);
  assert.ok(match, `index.d.ts has no interface ${name}`);
  const own = [...match[2].matchAll(/^ {2}(\w+)\??:/gm)].map((m) => m[1]);
  const inherited = match[1] ? match[1].split(',').flatMap((base) => interfaceProps(base.trim())) : [];
  return [...inherited, ...own];
}

/** Param names the d.ts accepts for a client method (first overload). */
function dtsParamNames(methodName) {
  // A notification's method has no options: its params type ends at `): `.
  const match = new RegExp(`\\n  ${methodName}\\(\\s*params\\??: ([^\\n]*?)(?:,\\s*\\n|, options|\\): )`).exec(outboxClassBody());
  assert.ok(match, `index.d.ts declares Outbox.${methodName}(params, options)`);
  const type = match[1].trim();
  if (type === 'Record<string, never>') return [];
  const inline = /^\{([^}]*)\}$/.exec(type);
  if (inline) return [...inline[1].matchAll(/(\w+)\??:/g)].map((m) => m[1]);
  return interfaceProps(/^\w+/.exec(type)[0]);
}

describe('protocol sync', () => {
  test('the client wire-method set equals methods[].name in Protocol/openrpc.json', () => {
    // shutdown and exit are the LSP-style lifecycle an editor drives; the client ends the server's
    // life itself (close(): end of input, then the final snapshot), so it does not offer them.
    // openrpc.json marks them `x-lifecycle`.
    const methods = readOpenRpc().methods;
    const lifecycle = methods.filter((m) => m['x-lifecycle'] === true).map((m) => m.name);
    assert.deepEqual(lifecycle.sort(), ['exit', 'shutdown']);
    const documented = methods.map((m) => m.name).filter((n) => !lifecycle.includes(n)).sort();
    const implemented = Object.values(METHODS).sort();
    const missing = documented.filter((n) => !implemented.includes(n));
    const extra = implemented.filter((n) => !documented.includes(n));
    assert.deepEqual(implemented, documented, `client lacks ${JSON.stringify(missing)}; openrpc.json lacks ${JSON.stringify(extra)}`);
  });

  test('each method takes the params openrpc.json documents (by name)', () => {
    const doc = readOpenRpc();
    for (const [methodName, wire] of Object.entries(METHODS)) {
      const method = doc.methods.find((m) => m.name === wire);
      if (!method) continue; // reported by the method-set test
      const documented = (method.params ?? []).map((p) => p.name ?? p.$ref?.split('/').pop()).sort();
      assert.deepEqual(dtsParamNames(methodName).sort(), documented, `params of ${wire}`);
    }
  });

  test('every wire method has a camelCase method on Outbox and in index.d.ts', () => {
    const body = outboxClassBody();
    for (const name of Object.keys(METHODS)) {
      assert.equal(typeof Outbox.prototype[name], 'function', `Outbox.prototype.${name}`);
      assert.match(body, new RegExp(`\\n  ${name}\\(`), `index.d.ts Outbox.${name}`);
    }
  });

  test('index.d.ts (with types/*.d.ts) declares exactly the runtime exports', () => {
    const declared = [...dts.matchAll(/^export declare (?:class|const|function) (\w+)/gm)].map((m) => m[1]).sort();
    assert.deepEqual(declared, Object.keys(client).sort());
  });

  test('package.json exports point at existing files, types first', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(clientDir, 'package.json'), 'utf8'));
    assert.equal(pkg.type, 'module');
    assert.deepEqual(Object.keys(pkg.exports['.']), ['types', 'default']);
    for (const target of Object.values(pkg.exports['.'])) assert.ok(fs.existsSync(path.join(clientDir, target)), target);
    assert.equal(pkg.dependencies, undefined);
  });
});
