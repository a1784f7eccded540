// push-outbox Node client: spawns the push-outbox binary and talks
// line-delimited JSON-RPC 2.0 to it over stdin/stdout.
//
//   const ob = await Outbox.spawn({ store: './outbox' });
//   try { await ob.saveCustomEvent({ name: 'push_opened' }); } finally { await ob.close(); }

import { spawn as spawnChild } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AbortError,
  BinaryNotFoundError,
  ClosedError,
  ErrorCodes,
  ParseError,
  RpcError,
  ServerExitedError,
  TimeoutError,
} from './errors.js';

export * from './errors.js';

/** camelCase client method -> wire method name. The wire names live only here. */
export const METHODS = Object.freeze({
  parsePayload: 'parsePayload',
  saveCustomEvent: 'saveCustomEvent',
  saveCustomAttribute: 'saveCustomAttribute',
  saveUserAttribute: 'saveUserAttribute',
  flushPending: 'flushPending',
  ackFlush: 'ackFlush',
  releaseFlush: 'releaseFlush',
  status: 'status',
  deliverPending: 'deliverPending',
  listDeadLetters: 'listDeadLetters',
  requeueDeadLetters: 'requeueDeadLetters',
  dropDeadLetters: 'dropDeadLetters',
  importLegacy: 'importLegacy',
  discover: 'rpc.discover',
});

/** The App Group keys of Braze's push guide that `importLegacy` reads. */
export const LEGACY_LISTS = Object.freeze(['pending_custom_events', 'pending_custom_attributes', 'pending_user_attributes']);

/**
 * The `importLegacy` params from an App Group's `UserDefaults` as `plutil -convert json` gives it:
 * the three `pending_*` keys that are present; every other key is left out.
 */
export function legacyLists(defaults) {
  const params = {};
  for (const key of LEGACY_LISTS) {
    if (defaults != null && Object.hasOwn(defaults, key)) params[key] = defaults[key];
  }
  return params;
}

export const BINARY_NAME = 'push-outbox';
export const DEFAULT_TIMEOUT_MS = 30_000;
/** The server's default --max-line-bytes (16 MiB). */
export const DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024;
const DEFAULT_STDERR_TAIL_BYTES = 64 * 1024;
const MAX_TIMER_MS = 2 ** 31 - 1;
const NEWLINE = 0x0a;
/** Error codes the server answers with id null when it cannot read a request's id. */
const REQUEST_LEVEL_CODES = new Set([-32700, -32600]);
// JSON.stringify escapes lone surrogates as \udXXX; paired ones are emitted raw.
// Such a line is rejected by the server with an unattributable -32700 (id null).
const LONE_SURROGATE_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\u[dD][89a-fA-F][0-9a-fA-F]{2}/;

const moduleDir = path.dirname(fileURLToPath(import.meta.url));

/** Where a package built by `.ci/package` carries its own binary. */
export const BUNDLED_BINARY = path.join(moduleDir, '..', 'bin', BINARY_NAME);

/**
 * Locates the push-outbox executable (order documented in Protocol/README.md, "Finding the binary"):
 * the `binary` option, env PUSH_OUTBOX_BIN, the binary bundled in this package (`bin/push-outbox`),
 * `push-outbox` on PATH, then `.build/release/push-outbox` and `.build/debug/push-outbox` in every
 * directory from `cwd` upwards, then from this module's directory upwards (`searchDirs` replaces
 * those two starting points; `bundled` replaces the bundled path).
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
      for (const config of ['release', 'debug']) {
        const candidate = path.join(dir, '.build', config, BINARY_NAME);
        if (isExecutableFile(candidate)) return candidate;
        searched.push(candidate);
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

/** A running push-outbox server and the JSON-RPC connection to it. */
export class Outbox extends EventEmitter {
  /**
   * Starts the server. Resolves once the process is spawned (not once it is ready:
   * a server that fails at startup makes the first call reject with ServerExitedError).
   * @param {import('../index.js').SpawnOptions} [options]
   * @returns {Promise<Outbox>}
   */
  static async spawn(options = {}) {
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
    const outbox = new Outbox(child, {
      binary,
      timeoutMs: options.timeoutMs,
      maxLineBytes: options.maxLineBytes ?? maxLineBytesFrom(argv, env),
      stderrTailBytes: options.stderrTailBytes,
    });
    await outbox.#spawned;
    return outbox;
  }

  /** @type {import('node:child_process').ChildProcess} */
  child;
  /** Path of the executable that was started. */
  binary;
  /** Exit code once the process has exited (null while running or when killed by a signal). */
  exitCode = null;
  /** Signal that killed the process, if any. */
  signalCode = null;
  /** Resolves with {exitCode, signal} once the process is gone and every pending call is settled. */
  exited;

  #pending = new Map();
  #nextId = 1;
  #timeoutMs;
  #maxLineBytes;
  #stderrTailBytes;
  #stderrTail = Buffer.alloc(0);
  #stdoutParts = [];
  #decoder = new TextDecoder('utf-8', { fatal: true });
  #spawned;
  #resolveExited;
  #finalized = false;
  #finalError = null;
  #closing = false;
  #closePromise = null;
  #stdinError = null;
  #lastServerError = null;
  #timers = new Set();

  /** Use Outbox.spawn(). */
  constructor(child, { binary, timeoutMs, maxLineBytes, stderrTailBytes } = {}) {
    super();
    this.child = child;
    this.binary = binary;
    this.#timeoutMs = timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#maxLineBytes = maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.#stderrTailBytes = stderrTailBytes ?? DEFAULT_STDERR_TAIL_BYTES;
    this.exited = new Promise((resolve) => (this.#resolveExited = resolve));
    this.#spawned = new Promise((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (err) => {
        reject(err);
        this.#finalize();
      });
    });
    this.#spawned.catch(() => {});

    child.on('error', (err) => this.emit('processError', err));
    // EPIPE (and any other write failure) must never become an uncaught exception.
    child.stdin.on('error', (err) => this.#onStdinError(err));
    child.stdout.on('data', (chunk) => this.#onStdout(chunk));
    child.stdout.on('end', () => this.#onStdoutEnd());
    child.stdout.on('error', () => {});
    child.stderr.on('data', (chunk) => this.#onStderr(chunk));
    child.stderr.on('error', () => {});
    child.on('exit', (code, signal) => {
      this.exitCode = code;
      this.signalCode = signal;
      // 'close' follows once stdout/stderr are drained; do not wait forever if a
      // grandchild keeps the pipes open.
      this.#later(1000, () => this.#finalize());
    });
    child.on('close', () => this.#finalize());
  }

  /** OS process id of the server. */
  get pid() {
    return this.child.pid;
  }

  /** Number of calls waiting for an answer. */
  get pendingCount() {
    return this.#pending.size;
  }

  /** The last ~64 KiB the server wrote to stderr. */
  get stderrTail() {
    return this.#stderrTail.toString('utf8');
  }

  /** True once the server process is gone and pending calls were rejected. */
  get isExited() {
    return this.#finalized;
  }

  // MARK: - Wire methods

  /** @param {object} params @param {import('../index.js').CallOptions} [options] */
  parsePayload(params, options) {
    return this.call(METHODS.parsePayload, params ?? {}, options);
  }
  saveCustomEvent(params, options) {
    return this.call(METHODS.saveCustomEvent, params ?? {}, options);
  }
  saveCustomAttribute(params, options) {
    return this.call(METHODS.saveCustomAttribute, params ?? {}, options);
  }
  saveUserAttribute(params, options) {
    return this.call(METHODS.saveUserAttribute, params ?? {}, options);
  }
  flushPending(params, options) {
    return this.call(METHODS.flushPending, params ?? {}, options);
  }
  ackFlush(params, options) {
    return this.call(METHODS.ackFlush, params ?? {}, options);
  }
  releaseFlush(params, options) {
    return this.call(METHODS.releaseFlush, params ?? {}, options);
  }
  status(params, options) {
    return this.call(METHODS.status, params ?? {}, options);
  }
  /** deliverPending: one delivery pass to Braze; resolves when it is done. */
  deliverPending(params, options) {
    return this.call(METHODS.deliverPending, params ?? {}, options);
  }
  listDeadLetters(params, options) {
    return this.call(METHODS.listDeadLetters, params ?? {}, options);
  }
  requeueDeadLetters(params, options) {
    return this.call(METHODS.requeueDeadLetters, params ?? {}, options);
  }
  dropDeadLetters(params, options) {
    return this.call(METHODS.dropDeadLetters, params ?? {}, options);
  }
  /**
   * importLegacy: the pending analytics of Braze's push guide; each element is checked by its save
   * method. Per-element errors come back in `results` (never thrown). Use `legacyLists(defaults)` to
   * pick the lists out of a whole App Group object.
   */
  importLegacy(params, options) {
    return this.call(METHODS.importLegacy, params ?? {}, options);
  }
  /** rpc.discover: the server's OpenRPC document. */
  discover(params, options) {
    return this.call(METHODS.discover, params ?? {}, options);
  }

  // MARK: - Generic calls

  /**
   * Sends a request and resolves with its `result`, or rejects with an RpcError subclass,
   * TimeoutError, AbortError, ServerExitedError or ClosedError.
   * @param {string} method
   * @param {object | unknown[]} [params] omitted from the wire when undefined
   * @param {import('../index.js').CallOptions} [options]
   */
  call(method, params, options = {}) {
    return new Promise((resolve, reject) => {
      const line = this.#encode(method, params, this.#nextId, reject);
      if (line === undefined) return;
      const { signal, timeoutMs = this.#timeoutMs } = options ?? {};
      if (this.#closing) return reject(new ClosedError(method));
      if (this.#finalized) return reject(this.#exitErrorFor(method));
      if (signal?.aborted) return reject(abortErrorFor(method, signal.reason));

      const id = this.#nextId;
      this.#nextId = this.#nextId >= Number.MAX_SAFE_INTEGER ? 1 : this.#nextId + 1;
      const pending = { id, method, resolve, reject, timer: null, signal, onAbort: null };
      this.#pending.set(id, pending);
      if (Number.isFinite(timeoutMs) && timeoutMs > 0 && timeoutMs <= MAX_TIMER_MS) {
        pending.timer = setTimeout(() => this.#settle(pending, new TimeoutError(method, timeoutMs)), timeoutMs);
      }
      if (signal) {
        pending.onAbort = () => this.#settle(pending, abortErrorFor(method, signal.reason));
        signal.addEventListener('abort', pending.onAbort, { once: true });
      }
      this.#write(line);
    });
  }

  /**
   * Sends a notification (no id, never answered). Resolves once the line is handed to the OS.
   * @param {string} method
   * @param {object | unknown[]} [params]
   * @returns {Promise<void>}
   */
  notify(method, params) {
    return new Promise((resolve, reject) => {
      const line = this.#encode(method, params, undefined, reject);
      if (line === undefined) return;
      if (this.#closing) return reject(new ClosedError(method));
      if (this.#finalized) return reject(this.#exitErrorFor(method));
      const failed = () => this.exited.then(() => reject(this.#exitErrorFor(method)));
      if (this.#stdinError) return failed();
      this.child.stdin.write(line, (err) => (err ? failed() : resolve()));
    });
  }

  // MARK: - Shutdown

  /**
   * Ends stdin and waits for the server to exit; escalates to SIGTERM after `graceMs`
   * and to SIGKILL after a further `termMs`. Idempotent. Resolves with the exit code
   * (null if the process was killed by a signal; see `signalCode`).
   * @returns {Promise<number | null>}
   */
  close({ graceMs = 5000, termMs = 2000 } = {}) {
    if (this.#closePromise) return this.#closePromise;
    this.#closing = true;
    this.#closePromise = (async () => {
      if (!this.#finalized) {
        try {
          this.child.stdin.end();
        } catch {
          // already destroyed
        }
        if (!(await this.#waitExited(graceMs))) {
          this.#kill('SIGTERM');
          if (!(await this.#waitExited(termMs))) {
            this.#kill('SIGKILL');
            await this.exited;
          }
        }
      }
      return this.exitCode;
    })();
    return this.#closePromise;
  }

  // MARK: - Internals

  #encode(method, params, id, reject) {
    if (typeof method !== 'string') {
      reject(new TypeError('method must be a string'));
      return undefined;
    }
    if (params !== undefined && (params === null || typeof params !== 'object')) {
      reject(new TypeError(`${method}: params must be an object or an array`));
      return undefined;
    }
    const message = id === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', id, method };
    if (params !== undefined) message.params = params;
    let line;
    try {
      line = JSON.stringify(message);
    } catch (err) {
      reject(new TypeError(`${method}: params cannot be encoded as JSON: ${err.message}`, { cause: err }));
      return undefined;
    }
    if ((line.includes('\\ud') || line.includes('\\uD')) && LONE_SURROGATE_ESCAPE.test(line)) {
      reject(new TypeError(`${method}: params contain a lone UTF-16 surrogate, which is not valid Unicode`));
      return undefined;
    }
    if (this.#maxLineBytes > 0 && line.length > this.#maxLineBytes / 3) {
      const bytes = Buffer.byteLength(line, 'utf8');
      if (bytes > this.#maxLineBytes) {
        const data = { reason: 'line_too_long', limit: this.#maxLineBytes, length: bytes };
        reject(new ParseError(ErrorCodes.ParseError, `Request line is ${bytes} bytes, over the limit`, data, method));
        return undefined;
      }
    }
    return line + '\n';
  }

  #write(line) {
    if (this.#stdinError || this.child.stdin.destroyed) return; // rejected when the process is gone
    this.child.stdin.write(line);
  }

  #settle(pending, error, result) {
    if (this.#pending.get(pending.id) !== pending) return;
    this.#pending.delete(pending.id);
    if (pending.timer) clearTimeout(pending.timer);
    if (pending.onAbort) pending.signal.removeEventListener('abort', pending.onAbort);
    if (error) pending.reject(error);
    else pending.resolve(result);
  }

  #onStdout(chunk) {
    let start = 0;
    let newline;
    while ((newline = chunk.indexOf(NEWLINE, start)) !== -1) {
      let line = chunk.subarray(start, newline);
      if (this.#stdoutParts.length > 0) {
        this.#stdoutParts.push(line);
        line = Buffer.concat(this.#stdoutParts);
        this.#stdoutParts = [];
      }
      this.#onLine(line);
      start = newline + 1;
    }
    if (start < chunk.length) this.#stdoutParts.push(chunk.subarray(start));
  }

  #onStdoutEnd() {
    if (this.#stdoutParts.length > 0) {
      const rest = Buffer.concat(this.#stdoutParts);
      this.#stdoutParts = [];
      this.#onLine(rest);
    }
  }

  #onLine(bytes) {
    let text;
    try {
      text = this.#decoder.decode(bytes);
    } catch (err) {
      this.emit('protocolError', { line: bytes.toString('latin1'), error: err });
      return;
    }
    if (text.trim() === '') return;
    let message;
    try {
      message = JSON.parse(text);
    } catch (err) {
      this.emit('protocolError', { line: text, error: err });
      return;
    }
    if (Array.isArray(message)) for (const item of message) this.#onMessage(item, text);
    else this.#onMessage(message, text);
  }

  #onMessage(message, line) {
    if (message === null || typeof message !== 'object' || message.jsonrpc !== '2.0') {
      this.emit('protocolError', { line, error: new Error('not a JSON-RPC 2.0 message') });
      return;
    }
    if (!('id' in message)) {
      this.emit(typeof message.method === 'string' ? 'notification' : 'protocolError', message);
      return;
    }
    const hasError = 'error' in message;
    let pending = typeof message.id === 'number' ? this.#pending.get(message.id) : undefined;
    // The id-null rule (Protocol/README.md, "Errors with id null"): a -32700 or -32600 with id null
    // answers the oldest pending call (the server answers lines in order); any other id-null error
    // is a start-up notice that answers no call.
    if (!pending && message.id === null && hasError && REQUEST_LEVEL_CODES.has(message.error?.code)) {
      pending = this.#pending.values().next().value;
    }
    if (!pending) {
      if (message.id === null && hasError) this.#lastServerError = RpcError.fromWire(message.error);
      this.emit('unmatched', message); // e.g. a late answer to a call that timed out
      return;
    }
    if (hasError) this.#settle(pending, RpcError.fromWire(message.error, pending.method));
    else this.#settle(pending, null, message.result);
  }

  #onStderr(chunk) {
    this.emit('stderr', chunk);
    const limit = this.#stderrTailBytes;
    if (chunk.length >= limit) {
      this.#stderrTail = Buffer.from(chunk.subarray(chunk.length - limit));
    } else {
      const joined = Buffer.concat([this.#stderrTail, chunk]);
      this.#stderrTail = joined.length > limit ? joined.subarray(joined.length - limit) : joined;
    }
  }

  #onStdinError(err) {
    if (this.#stdinError) return;
    this.#stdinError = err;
    this.emit('stdinError', err);
    // The server can no longer read requests. Give it a moment to exit on its own,
    // then make sure it does, so that every pending call is rejected.
    this.#later(1000, () => {
      this.#kill('SIGTERM');
      this.#later(2000, () => this.#kill('SIGKILL'));
    });
  }

  #kill(signal) {
    if (this.#finalized || this.exitCode !== null || this.signalCode !== null) return;
    try {
      this.child.kill(signal);
    } catch {
      // already gone
    }
  }

  #later(ms, fn) {
    if (this.#finalized) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      fn();
    }, ms);
    this.#timers.add(timer);
  }

  #waitExited(ms) {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.exited.then(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  #exitErrorFor(method) {
    const base = this.#finalError;
    return new ServerExitedError({
      exitCode: base?.exitCode ?? this.exitCode,
      signal: base?.signal ?? this.signalCode,
      stderr: base?.stderr ?? this.stderrTail,
      method,
      cause: this.#stdinError ?? undefined,
      serverError: this.#lastServerError,
    });
  }

  #finalize() {
    if (this.#finalized) return;
    this.#onStdoutEnd();
    this.#finalized = true;
    if (this.exitCode === null && this.signalCode === null) {
      this.exitCode = this.child.exitCode;
      this.signalCode = this.child.signalCode;
    }
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#finalError = this.#exitErrorFor(undefined);
    for (const pending of [...this.#pending.values()]) this.#settle(pending, this.#exitErrorFor(pending.method));
    const info = { exitCode: this.exitCode, signal: this.signalCode };
    this.#resolveExited(info);
    this.emit('exit', info.exitCode, info.signal);
  }
}

if (typeof Symbol.asyncDispose === 'symbol') {
  Object.defineProperty(Outbox.prototype, Symbol.asyncDispose, {
    value: async function asyncDispose() {
      await this.close();
    },
    writable: true,
    configurable: true,
  });
}

function abortErrorFor(method, reason) {
  if (reason instanceof Error && reason.name === 'TimeoutError') return new TimeoutError(method, null, { cause: reason });
  return new AbortError(method, reason);
}

function maxLineBytesFrom(argv, env) {
  let value = env.PUSH_OUTBOX_MAX_LINE_BYTES;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--max-line-bytes' && i + 1 < argv.length) value = argv[i + 1];
    else if (argv[i].startsWith('--max-line-bytes=')) value = argv[i].slice('--max-line-bytes='.length);
  }
  const n = Number(value);
  return value !== undefined && Number.isInteger(n) && n > 0 ? n : DEFAULT_MAX_LINE_BYTES;
}
