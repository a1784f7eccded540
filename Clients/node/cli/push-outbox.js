#!/usr/bin/env node
// `push-outbox` on PATH from the npm package ("bin" in package.json; `npx push-outbox`): runs the
// binary the client would spawn (findBinary: in the published tarball, the one bundled in it) with
// the same arguments and standard streams (inherited, not piped), passes on SIGTERM, SIGINT, SIGHUP
// and SIGQUIT, and ends the way the binary ended: its exit status, or the same signal.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BINARY_NAME, findBinary } from '../src/discovery.js';

const FORWARDED = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT'];
const self = fs.realpathSync(fileURLToPath(import.meta.url));

// PATH without directories whose push-outbox is this script (npx puts node_modules/.bin first):
// taken for the binary, it would run itself.
function pathWithoutSelf(value) {
  return (value ?? '')
    .split(path.delimiter)
    .filter((dir) => {
      try {
        return fs.realpathSync(path.join(dir, BINARY_NAME)) !== self;
      } catch {
        return true;
      }
    })
    .join(path.delimiter);
}

let binary;
try {
  binary = findBinary({ env: { ...process.env, PATH: pathWithoutSelf(process.env.PATH) } });
} catch (error) {
  process.stderr.write(`${BINARY_NAME}: ${error.message}\n`);
  process.exit(127);
}

const child = spawn(binary, process.argv.slice(2), { stdio: 'inherit' });
const forward = (signal) => {
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
};
for (const signal of FORWARDED) process.on(signal, forward);

child.on('error', (error) => {
  process.stderr.write(`${BINARY_NAME}: cannot run ${binary}: ${error.message}\n`);
  process.exit(126);
});
child.on('exit', (code, signal) => {
  for (const name of FORWARDED) process.off(name, forward);
  if (signal !== null) {
    // Die of the same signal, so a parent sees what it would have seen from the binary itself.
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
