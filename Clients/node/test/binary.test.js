// Binary discovery order: option, PUSH_OUTBOX_BIN, bundled, PATH, then .build/{release,debug} and
// .build-static/{release,debug} (where .ci/build-static builds) walking up.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { BinaryNotFoundError, findBinary } from '../src/index.js';
import { tempDir } from './helpers.js';

function fakeExecutable(file) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  return file;
}

describe('findBinary', () => {
  const root = tempDir();
  const deep = path.join(root, 'a', 'b', 'c');
  fs.mkdirSync(deep, { recursive: true });
  const debug = fakeExecutable(path.join(root, 'a', '.build', 'debug', 'push-outbox'));
  const onPath = fakeExecutable(path.join(root, 'bin', 'push-outbox'));

  test('the binary option wins', () => {
    assert.equal(findBinary({ binary: '/x/y', env: { PUSH_OUTBOX_BIN: '/env', PATH: path.dirname(onPath) }, cwd: deep }), '/x/y');
  });

  test('then PUSH_OUTBOX_BIN', () => {
    assert.equal(findBinary({ env: { PUSH_OUTBOX_BIN: '/env', PATH: path.dirname(onPath) }, cwd: deep }), '/env');
  });

  test('then the binary bundled in the package', () => {
    const bundled = fakeExecutable(path.join(tempDir(), 'bin', 'push-outbox'));
    assert.equal(findBinary({ env: { PATH: path.dirname(onPath) }, cwd: deep, bundled }), bundled);
    assert.equal(findBinary({ env: { PUSH_OUTBOX_BIN: '/env' }, cwd: deep, bundled }), '/env');
  });

  test('a missing bundled binary is skipped', () => {
    const bundled = path.join(tempDir(), 'bin', 'push-outbox');
    assert.equal(findBinary({ env: { PATH: path.dirname(onPath) }, cwd: deep, bundled }), onPath);
  });

  test('then push-outbox on PATH', () => {
    assert.equal(findBinary({ env: { PATH: ['/nonexistent', path.dirname(onPath)].join(path.delimiter) }, cwd: deep }), onPath);
  });

  test('then .build/debug walking up from cwd', () => {
    assert.equal(findBinary({ env: { PATH: '' }, cwd: deep }), debug);
  });

  test('.build/release is preferred over .build/debug in the same directory', () => {
    const release = fakeExecutable(path.join(root, 'a', '.build', 'release', 'push-outbox'));
    try {
      assert.equal(findBinary({ env: { PATH: '' }, cwd: deep }), release);
    } finally {
      fs.rmSync(release);
    }
  });

  test('.build-static/ (.ci/build-static) is searched after .build/ at each level', () => {
    const checkout = tempDir();
    const inner = path.join(checkout, 'x', 'y');
    fs.mkdirSync(inner, { recursive: true });
    const staticRelease = fakeExecutable(path.join(checkout, '.build-static', 'release', 'push-outbox'));
    assert.equal(findBinary({ env: { PATH: '' }, searchDirs: [inner] }), staticRelease);
    const plainDebug = fakeExecutable(path.join(checkout, '.build', 'debug', 'push-outbox'));
    assert.equal(findBinary({ env: { PATH: '' }, searchDirs: [inner] }), plainDebug);
    const nearer = fakeExecutable(path.join(checkout, 'x', '.build-static', 'debug', 'push-outbox'));
    assert.equal(findBinary({ env: { PATH: '' }, searchDirs: [inner] }), nearer);
  });

  test('a non-executable file is skipped', () => {
    const other = tempDir();
    const plain = path.join(other, '.build', 'debug', 'push-outbox');
    fs.mkdirSync(path.dirname(plain), { recursive: true });
    fs.writeFileSync(plain, 'not executable', { mode: 0o644 });
    assert.throws(() => findBinary({ env: { PATH: '' }, searchDirs: [other] }), BinaryNotFoundError);
  });

  test('the module directory is searched too', () => {
    const empty = tempDir();
    assert.equal(findBinary({ env: { PATH: '' }, searchDirs: [empty, deep] }), debug);
  });

  test('nothing found: BinaryNotFoundError listing the searched paths', () => {
    const empty = tempDir();
    assert.throws(
      () => findBinary({ env: { PATH: '' }, searchDirs: [empty] }),
      (err) => {
        assert.ok(err instanceof BinaryNotFoundError);
        assert.ok(err.searched.includes(path.join(empty, '.build', 'release', 'push-outbox')));
        assert.ok(err.searched.includes(path.join(empty, '.build', 'debug', 'push-outbox')));
        assert.ok(err.searched.includes(path.join(empty, '.build-static', 'release', 'push-outbox')));
        assert.ok(err.searched.includes(path.join(empty, '.build-static', 'debug', 'push-outbox')));
        assert.match(err.message, /build-static/);
        assert.ok(err.searched.includes('/.build/debug/push-outbox'));
        assert.match(err.message, /PUSH_OUTBOX_BIN/);
        return true;
      },
    );
  });
});
