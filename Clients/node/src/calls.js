// Request/response correlation: the calls waiting for an answer, by id.

import { AbortError, RpcError, TimeoutError } from './errors.js';
import { LONG_METHODS } from './methods.js';

const MAX_TIMER_MS = 2 ** 31 - 1;
/** Error codes the server answers with id null when it cannot read a request's id. */
const REQUEST_LEVEL_CODES = new Set([-32700, -32600]);

/** The calls sent and not yet settled, each with its timeout and abort signal. */
export class PendingCalls {
  #pending = new Map();
  #nextId = 1;

  /** Number of calls waiting for an answer. */
  get size() {
    return this.#pending.size;
  }

  /** The id the next call will get. */
  get nextId() {
    return this.#nextId;
  }

  /**
   * Registers a call under `nextId`; it settles on its answer, its timeout or its signal. An aborted
   * call also calls `onCancel(id)` (the client sends `$/cancelRequest`); `onProgress` gets the
   * `$/progress` values whose token is the call's id.
   */
  add(method, resolve, reject, { signal, timeoutMs, onProgress, onCancel }) {
    const id = this.#nextId;
    this.#nextId = this.#nextId >= Number.MAX_SAFE_INTEGER ? 1 : this.#nextId + 1;
    const pending = { id, method, resolve, reject, timer: null, signal, onAbort: null, onProgress };
    this.#pending.set(id, pending);
    if (Number.isFinite(timeoutMs) && timeoutMs > 0 && timeoutMs <= MAX_TIMER_MS) {
      pending.timer = setTimeout(() => this.#settle(pending, new TimeoutError(method, timeoutMs)), timeoutMs);
    }
    if (signal) {
      pending.onAbort = () => {
        if (this.#settle(pending, abortErrorFor(method, signal.reason))) onCancel?.(id);
      };
      signal.addEventListener('abort', pending.onAbort, { once: true });
    }
  }

  /** Hands a `$/progress` value to the pending call whose id is `token`. False when none. */
  progress(token, value) {
    const pending = typeof token === 'number' ? this.#pending.get(token) : undefined;
    if (!pending?.onProgress) return false;
    pending.onProgress(value);
    return true;
  }

  /**
   * Settles the call a response message answers. Returns false when it answers none.
   * The id-null rule (Protocol/README.md, "Errors with id null"): a -32700 or -32600 with id null
   * answers the oldest pending call that is not a long call (the server answers every other line
   * in order); any other id-null error is a start-up notice that answers no call.
   */
  answer(message) {
    const hasError = 'error' in message;
    let pending = typeof message.id === 'number' ? this.#pending.get(message.id) : undefined;
    if (!pending && message.id === null && hasError && REQUEST_LEVEL_CODES.has(message.error?.code)) {
      pending = [...this.#pending.values()].find((call) => !LONG_METHODS.has(call.method));
    }
    if (!pending) return false;
    if (hasError) this.#settle(pending, RpcError.fromWire(message.error, pending.method));
    else this.#settle(pending, null, message.result);
    return true;
  }

  /** Rejects every pending call with `errorFor(method)`. */
  rejectAll(errorFor) {
    for (const pending of [...this.#pending.values()]) this.#settle(pending, errorFor(pending.method));
  }

  #settle(pending, error, result) {
    if (this.#pending.get(pending.id) !== pending) return false;
    this.#pending.delete(pending.id);
    if (pending.timer) clearTimeout(pending.timer);
    if (pending.onAbort) pending.signal.removeEventListener('abort', pending.onAbort);
    if (error) pending.reject(error);
    else pending.resolve(result);
    return true;
  }
}

/** The error an aborted call rejects with (AbortSignal.timeout() aborts become TimeoutError). */
export function abortErrorFor(method, reason) {
  if (reason instanceof Error && reason.name === 'TimeoutError') return new TimeoutError(method, null, { cause: reason });
  return new AbortError(method, reason);
}
