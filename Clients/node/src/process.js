// Starting the server process, and waiting on it.

import { spawn as spawnChild } from 'node:child_process';
import { findBinary } from './discovery.js';
import { DEFAULT_MAX_LINE_BYTES } from './wire.js';

/** Spawns the server as `Outbox.spawn(options)` describes; returns the child and what it runs with. */
export function startServer(options) {
  const binary = findBinary({ binary: options.binary, env: options.env ?? process.env, cwd: options.cwd });
  const argv = [];
  if (options.store != null) argv.push('--store', String(options.store));
  if (options.memory) argv.push('--memory');
  argv.push(...(options.args ?? []).map(String));
  const env = options.env ?? process.env;
  const child = spawnChild(binary, argv, {
    cwd: options.cwd,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
    windowsHide: true,
  });
  return { child, binary, maxLineBytes: options.maxLineBytes ?? maxLineBytesFrom(argv, env) };
}

/** Resolves true once `promise` settles, or false after `ms` milliseconds. */
export function settlesWithin(promise, ms) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    promise.then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** The --max-line-bytes the server will run with, from its argv and environment. */
export function maxLineBytesFrom(argv, env) {
  let value = env.PUSH_OUTBOX_MAX_LINE_BYTES;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--max-line-bytes' && i + 1 < argv.length) value = argv[i + 1];
    else if (argv[i].startsWith('--max-line-bytes=')) value = argv[i].slice('--max-line-bytes='.length);
  }
  const n = Number(value);
  return value !== undefined && Number.isInteger(n) && n > 0 ? n : DEFAULT_MAX_LINE_BYTES;
}
