// Shared helpers for the push-outbox Node client tests.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Outbox } from '../src/index.js';

export const testDir = path.dirname(fileURLToPath(import.meta.url));
export const clientDir = path.resolve(testDir, '..');
export const repoRoot = path.resolve(testDir, '../../..');
export const transcriptsDir = path.join(repoRoot, 'Protocol', 'transcripts');
export const openrpcPath = path.join(repoRoot, 'Protocol', 'openrpc.json');
export const FIXED_CLOCK = '2026-01-01T00:00:00.000Z';
/** Deterministic flags every test run of the real binary gets. */
export const TEST_ARGS = ['--memory', '--fixed-clock', FIXED_CLOCK, '--id-seed', '1'];

/**
 * The real push-outbox binary: $PUSH_OUTBOX_BIN, else the newer of the repository's
 * .build/debug and .build/release builds. Fails the calling test when there is none.
 */
export function realBinary() {
  if (process.env.PUSH_OUTBOX_BIN) {
    const bin = process.env.PUSH_OUTBOX_BIN;
    assert.ok(isExecutable(bin), `PUSH_OUTBOX_BIN=${bin} is not an executable file`);
    return bin;
  }
  const candidates = ['debug', 'release']
    .map((config) => path.join(repoRoot, '.build', config, 'push-outbox'))
    .filter(isExecutable)
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  if (candidates.length === 0) {
    assert.fail(
      `push-outbox binary not found: looked for ${path.join(repoRoot, '.build/{debug,release}/push-outbox')}. ` +
        'Build it first with `swift build` in the repository root, or set PUSH_OUTBOX_BIN.',
    );
  }
  return candidates[0];
}

function isExecutable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Spawns the real binary with TEST_ARGS (plus `args`). */
export function spawnReal({ args = [], ...options } = {}) {
  return Outbox.spawn({ binary: realBinary(), args: [...TEST_ARGS, ...args], timeoutMs: 20_000, ...options });
}

const tempDirs = [];
process.on('exit', () => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** A fresh temporary directory, removed when the process exits. */
export function tempDir(prefix = 'push-outbox-node-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

/** Writes an executable /bin/sh script with `body` and returns its path. */
export function shellServer(body) {
  const file = path.join(tempDir('push-outbox-fake-'), 'fake-server.sh');
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

/** An executable wrapper around test/fixtures/fake-server.mjs in the given mode. */
export function nodeServer(mode, arg = '') {
  const script = path.join(testDir, 'fixtures', 'fake-server.mjs');
  return shellServer(`exec "${process.execPath}" "${script}" ${mode} ${arg}`);
}

/** Asserts that `promise` rejects with an instance of `Class` and returns the error. */
export async function rejectsWith(promise, Class, check = () => {}) {
  let error;
  await assert.rejects(promise, (err) => {
    error = err;
    assert.ok(err instanceof Class, `expected ${Class.name}, got ${err?.constructor?.name}: ${err?.message}`);
    check(err);
    return true;
  });
  return error;
}
