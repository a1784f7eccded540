// Error classes for the push-outbox Node client.
//
// Two families:
//   - RpcError and its subclasses: the server answered with a JSON-RPC error object.
//     `code`, `message` and `data` are copied verbatim from the wire.
//   - Transport errors (ServerExitedError, TimeoutError, AbortError, ClosedError,
//     BinaryNotFoundError): the call never got an answer.

/** JSON-RPC and push-outbox error codes, as in Protocol/openrpc.json. */
export const ErrorCodes = Object.freeze({
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  RequestCancelled: -32800,
  StoreFull: -32001,
  ItemTooLarge: -32002,
  StorageUnavailable: -32003,
  LeaseNotFound: -32004,
  StoreLocked: -32005,
  UnsupportedStoreVersion: -32006,
  StartupFailed: -32007,
  DeliveryNotConfigured: -32010,
});

/** Base class of every error this package throws on purpose. */
export class OutboxError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The server answered a request with a JSON-RPC error object. */
export class RpcError extends OutboxError {
  /**
   * @param {number} code
   * @param {string} message
   * @param {unknown} [data]
   * @param {string} [method] the method of the request that failed
   */
  constructor(code, message, data, method) {
    super(String(message));
    this.code = code;
    this.data = data;
    this.method = method;
  }

  /**
   * Builds the subclass matching `error.code` from a wire error object.
   * @param {{code: number, message: string, data?: unknown}} error
   * @param {string} [method]
   */
  static fromWire(error, method) {
    const Class = classByCode.get(error?.code) ?? RpcError;
    const message = typeof error?.message === 'string' ? error.message : 'Unknown error';
    return new Class(error?.code, message, error?.data, method);
  }

  toJSON() {
    const out = { code: this.code, message: this.message };
    if (this.data !== undefined) out.data = this.data;
    return out;
  }
}

export class ParseError extends RpcError {}
export class InvalidRequest extends RpcError {}
export class MethodNotFound extends RpcError {}

/** -32602. `errors` lists every problem the server found (`data.errors`). */
export class InvalidParams extends RpcError {
  constructor(code, message, data, method) {
    super(code, message, data, method);
    const errors = data && typeof data === 'object' ? data.errors : undefined;
    this.errors = Array.isArray(errors) ? errors : [];
  }
}

export class InternalError extends RpcError {}
/** -32800: a long call (deliverPending) answered early because it was cancelled. */
export class RequestCancelled extends RpcError {}
export class StoreFull extends RpcError {}
export class ItemTooLarge extends RpcError {}
export class StorageUnavailable extends RpcError {}
export class LeaseNotFound extends RpcError {}
export class StoreLocked extends RpcError {}
export class UnsupportedStoreVersion extends RpcError {}
export class StartupFailed extends RpcError {}
export class DeliveryNotConfigured extends RpcError {}

const classByCode = new Map([
  [ErrorCodes.ParseError, ParseError],
  [ErrorCodes.InvalidRequest, InvalidRequest],
  [ErrorCodes.MethodNotFound, MethodNotFound],
  [ErrorCodes.InvalidParams, InvalidParams],
  [ErrorCodes.InternalError, InternalError],
  [ErrorCodes.RequestCancelled, RequestCancelled],
  [ErrorCodes.StoreFull, StoreFull],
  [ErrorCodes.ItemTooLarge, ItemTooLarge],
  [ErrorCodes.StorageUnavailable, StorageUnavailable],
  [ErrorCodes.LeaseNotFound, LeaseNotFound],
  [ErrorCodes.StoreLocked, StoreLocked],
  [ErrorCodes.UnsupportedStoreVersion, UnsupportedStoreVersion],
  [ErrorCodes.StartupFailed, StartupFailed],
  [ErrorCodes.DeliveryNotConfigured, DeliveryNotConfigured],
]);

/**
 * The server process is gone (or its stdin broke) before the call was answered.
 * `exitCode` / `signal` are as reported by Node; `stderr` is the tail of its stderr;
 * `serverError` is the last unattributed (id null) RpcError the server sent, if any.
 */
export class ServerExitedError extends OutboxError {
  constructor({ exitCode = null, signal = null, stderr = '', method, cause, serverError = null } = {}) {
    const how = signal ? `was killed by ${signal}` : exitCode === null ? 'is gone' : `exited with code ${exitCode}`;
    const lastLine = lastNonEmptyLine(stderr);
    super(`push-outbox ${how}${lastLine ? `: ${lastLine}` : ''}`, cause ? { cause } : undefined);
    this.exitCode = exitCode;
    this.signal = signal;
    this.stderr = stderr;
    this.method = method;
    /** A JSON-RPC error the server sent with id null and no call to pin it on (e.g. store locked at startup). */
    this.serverError = serverError;
  }
}

/** The per-call timeout (`timeoutMs`, or an `AbortSignal.timeout()` signal) elapsed. */
export class TimeoutError extends OutboxError {
  constructor(method, timeoutMs, options) {
    super(`${method} timed out${timeoutMs != null ? ` after ${timeoutMs} ms` : ''}`, options);
    this.method = method;
    this.timeoutMs = timeoutMs ?? null;
  }
}

/** The call's AbortSignal fired. `cause` is the signal's reason. */
export class AbortError extends OutboxError {
  constructor(method, reason) {
    super(`${method} was aborted`, reason === undefined ? undefined : { cause: reason });
    this.method = method;
  }
}

/** The call was made after close() started. */
export class ClosedError extends OutboxError {
  constructor(method) {
    super(`${method}: the client is closed`);
    this.method = method;
  }
}

/** No push-outbox executable was found. `searched` lists every path that was tried. */
export class BinaryNotFoundError extends OutboxError {
  constructor(searched) {
    super(
      'push-outbox binary not found. Pass {binary}, set PUSH_OUTBOX_BIN, put push-outbox on PATH, ' +
        'or build it with `swift build` or `bash .ci/build-static`. Searched:\n  ' + searched.join('\n  '),
    );
    this.searched = searched;
  }
}

function lastNonEmptyLine(text) {
  const lines = String(text ?? '').split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i].trim();
    if (line) return line.length > 300 ? line.slice(0, 300) + '…' : line;
  }
  return '';
}
