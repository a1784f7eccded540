// Finding the push-outbox executable (Protocol/README.md, "Finding the binary").

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BinaryNotFoundError } from './errors.js';

export const BINARY_NAME = 'push-outbox';

const moduleDir = path.dirname(fileURLToPath(import.meta.url));

/** SwiftPM scratch directories searched at each level: `swift build`'s, then `.ci/build-static`'s. */
const BUILD_DIRS = ['.build', '.build-static'];

/** Where a package built by `.ci/package` carries its own binary. */
export const BUNDLED_BINARY = path.join(moduleDir, '..', 'bin', BINARY_NAME);

/**
 * Locates the push-outbox executable (order documented in Protocol/README.md, "Finding the binary"):
 * the `binary` option, env PUSH_OUTBOX_BIN, the binary bundled in this package (`bin/push-outbox`),
 * `push-outbox` on PATH, then `.build/release/push-outbox`, `.build/debug/push-outbox`,
 * `.build-static/release/push-outbox` and `.build-static/debug/push-outbox` (where `.ci/build-static`
 * builds) in every directory from `cwd` upwards, then from this module's directory upwards
 * (`searchDirs` replaces those two starting points; `bundled` replaces the bundled path).
 * @returns {string}
 * @throws {BinaryNotFoundError}
 */
export function findBinary({
  binary,
  env = process.env,
  cwd = process.cwd(),
  searchDirs = [cwd, moduleDir],
  bundled = BUNDLED_BINARY,
} = {}) {
  if (binary) return binary;
  if (env.PUSH_OUTBOX_BIN) return env.PUSH_OUTBOX_BIN;
  if (bundled && isExecutableFile(bundled)) return bundled;
  const searched = bundled ? [bundled] : [];
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, BINARY_NAME);
    if (isExecutableFile(candidate)) return candidate;
  }
  searched.push(`${BINARY_NAME} on PATH`);
  for (const start of searchDirs) {
    let dir = path.resolve(start);
    for (;;) {
      for (const buildDir of BUILD_DIRS) {
        for (const config of ['release', 'debug']) {
          const candidate = path.join(dir, buildDir, config, BINARY_NAME);
          if (isExecutableFile(candidate)) return candidate;
          searched.push(candidate);
        }
      }
      const parent = path.dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  throw new BinaryNotFoundError(searched);
}

function isExecutableFile(file) {
  try {
    if (!fs.statSync(file).isFile()) return false;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
