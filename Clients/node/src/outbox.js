// Outbox: the server process, and the JSON-RPC calls over its stdin/stdout.

import { EventEmitter } from 'node:events';
import { abortErrorFor, PendingCalls } from './calls.js';
import { ClosedError, RpcError, ServerExitedError } from './errors.js';
import { CANCEL_METHOD, PROGRESS_METHOD, defineWireMethods } from './methods.js';
import { settlesWithin, startServer } from './process.js';
import { DEFAULT_MAX_LINE_BYTES, LineSplitter, appendTail, decodeLine, encodeRequest } from './wire.js';

export const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_STDERR_TAIL_BYTES = 64 * 1024;

/** A running push-outbox server and the JSON-RPC connection to it. */
export class Outbox extends EventEmitter {
  /**
   * Starts the server. Resolves once the process is spawned (not once it is ready:
   * a server that fails at startup makes the first call reject with ServerExitedError).
   * @param {import('../index.js').SpawnOptions} [options]
   * @returns {Promise<Outbox>}
   */
  static async spawn(options = {}) {
    const { child, binary, maxLineBytes } = startServer(options);
    const outbox = new Outbox(child, {
      binary,
      timeoutMs: options.timeoutMs,
      maxLineBytes,
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

  #calls = new PendingCalls();
  #timeoutMs;
  #maxLineBytes;
  #stderrTailBytes;
  #stderrTail = Buffer.alloc(0);
  #stdout = new LineSplitter((line) => this.#onLine(line));
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
    child.stdout.on('data', (chunk) => this.#stdout.push(chunk));
    child.stdout.on('end', () => this.#stdout.end());
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
    return this.#calls.size;
  }

  /** The last ~64 KiB the server wrote to stderr. */
  get stderrTail() {
    return this.#stderrTail.toString('utf8');
  }

  /** True once the server process is gone and pending calls were rejected. */
  get isExited() {
    return this.#finalized;
  }

  // MARK: - Generic calls

  /**
   * Sends a request and resolves with its `result`, or rejects with an RpcError subclass,
   * TimeoutError, AbortError, ServerExitedError or ClosedError. Aborting `options.signal` also sends
   * `$/cancelRequest` (a long call stops on the server); `options.onProgress` gets the call's
   * `$/progress` values (the request then carries `workDoneToken`).
   * @param {string} method
   * @param {object | unknown[]} [params] omitted from the wire when undefined
   * @param {import('../index.js').CallOptions} [options]
   */
  call(method, params, options = {}) {
    return new Promise((resolve, reject) => {
      const { signal, timeoutMs = this.#timeoutMs, onProgress } = options ?? {};
      const id = this.#calls.nextId;
      if (onProgress && (params === undefined || (typeof params === 'object' && !Array.isArray(params)))) {
        params = { ...params, workDoneToken: id }; // the server's $/progress for it carries this token
      }
      const line = this.#encode(method, params, id, reject);
      if (line === undefined) return;
      if (this.#closing) return reject(new ClosedError(method));
      if (this.#finalized) return reject(this.#exitErrorFor(method));
      if (signal?.aborted) return reject(abortErrorFor(method, signal.reason));

      const onCancel = (callId) => this.#write(encodeRequest(CANCEL_METHOD, { id: callId }, undefined, 0));
      this.#calls.add(method, resolve, reject, { signal, timeoutMs, onProgress, onCancel });
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
    try {
      return encodeRequest(method, params, id, this.#maxLineBytes);
    } catch (err) {
      reject(err);
      return undefined;
    }
  }

  #write(line) {
    if (this.#stdinError || this.child.stdin.destroyed) return; // rejected when the process is gone
    this.child.stdin.write(line);
  }

  #onLine(bytes) {
    const decoded = decodeLine(bytes, this.#decoder);
    if (decoded === null) return;
    if (decoded.error) return void this.emit('protocolError', decoded);
    for (const message of decoded.messages) this.#onMessage(message, decoded.line);
  }

  #onMessage(message, line) {
    if (message === null || typeof message !== 'object' || message.jsonrpc !== '2.0') {
      this.emit('protocolError', { line, error: new Error('not a JSON-RPC 2.0 message') });
      return;
    }
    if (!('id' in message)) {
      if (message.method === PROGRESS_METHOD) this.#onProgress(message.params);
      this.emit(typeof message.method === 'string' ? 'notification' : 'protocolError', message);
      return;
    }
    if (this.#calls.answer(message)) return;
    if (message.id === null && 'error' in message) this.#lastServerError = RpcError.fromWire(message.error);
    this.emit('unmatched', message); // e.g. a late answer to a call that timed out
  }

  #onProgress(params) {
    try {
      this.#calls.progress(params?.token, params?.value);
    } catch (err) {
      this.emit('protocolError', { error: err, message: 'an onProgress callback threw' });
    }
  }

  #onStderr(chunk) {
    this.emit('stderr', chunk);
    this.#stderrTail = appendTail(this.#stderrTail, chunk, this.#stderrTailBytes);
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
    return settlesWithin(this.exited, ms);
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
    this.#stdout.end();
    this.#finalized = true;
    if (this.exitCode === null && this.signalCode === null) {
      this.exitCode = this.child.exitCode;
      this.signalCode = this.child.signalCode;
    }
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#finalError = this.#exitErrorFor(undefined);
    this.#calls.rejectAll((method) => this.#exitErrorFor(method));
    const info = { exitCode: this.exitCode, signal: this.signalCode };
    this.#resolveExited(info);
    this.emit('exit', info.exitCode, info.signal);
  }
}

defineWireMethods(Outbox.prototype);

if (typeof Symbol.asyncDispose === 'symbol') {
  Object.defineProperty(Outbox.prototype, Symbol.asyncDispose, {
    value: async function asyncDispose() {
      await this.close();
    },
    writable: true,
    configurable: true,
  });
}
