// The error classes of the Node client (src/errors.js).
// Part of the push-outbox Node client's types; import them from the package (index.d.ts re-exports them).

import type { JsonValue } from './wire.js';

// MARK: - Errors

export declare const ErrorCodes: Readonly<{
  ParseError: -32700;
  InvalidRequest: -32600;
  MethodNotFound: -32601;
  InvalidParams: -32602;
  InternalError: -32603;
  RequestCancelled: -32800;
  StoreFull: -32001;
  ItemTooLarge: -32002;
  StorageUnavailable: -32003;
  LeaseNotFound: -32004;
  StoreLocked: -32005;
  UnsupportedStoreVersion: -32006;
  StartupFailed: -32007;
  DeliveryNotConfigured: -32010;
}>;

export declare class OutboxError extends Error {}

/** The server answered with a JSON-RPC error. */
export declare class RpcError extends OutboxError {
  constructor(code: number, message: string, data?: unknown, method?: string);
  static fromWire(error: { code: number; message: string; data?: unknown }, method?: string): RpcError;
  readonly code: number;
  readonly data: unknown;
  /** The method of the failed request. */
  readonly method: string | undefined;
  toJSON(): { code: number; message: string; data?: unknown };
}

export declare class ParseError extends RpcError {}
export declare class InvalidRequest extends RpcError {}
export declare class MethodNotFound extends RpcError {}

export interface ParamError {
  path: string;
  code: string;
  message: string;
  key?: string;
  expected?: string;
  got?: string;
  [key: string]: JsonValue | undefined;
}

export declare class InvalidParams extends RpcError {
  /** `data.errors`: every problem found. */
  readonly errors: ParamError[];
}

export declare class InternalError extends RpcError {}
/** -32800: a long call (deliverPending) answered early because it was cancelled. */
export declare class RequestCancelled extends RpcError {}
export declare class StoreFull extends RpcError {}
export declare class ItemTooLarge extends RpcError {}
export declare class StorageUnavailable extends RpcError {}
export declare class LeaseNotFound extends RpcError {}
export declare class StoreLocked extends RpcError {}
export declare class UnsupportedStoreVersion extends RpcError {}
export declare class StartupFailed extends RpcError {}
export declare class DeliveryNotConfigured extends RpcError {}

/** The server died (or its stdin broke) before answering. */
export declare class ServerExitedError extends OutboxError {
  readonly exitCode: number | null;
  readonly signal: string | null;
  /** Tail of the server's stderr. */
  readonly stderr: string;
  readonly method: string | undefined;
  /** The last error the server sent with id null that no call could be matched to (e.g. StoreLocked at startup). */
  readonly serverError: RpcError | null;
}

export declare class TimeoutError extends OutboxError {
  readonly method: string;
  /** null when the timeout came from an AbortSignal.timeout() signal. */
  readonly timeoutMs: number | null;
}

export declare class AbortError extends OutboxError {
  readonly method: string;
}

/** A call made after close(). */
export declare class ClosedError extends OutboxError {
  readonly method: string;
}

export declare class BinaryNotFoundError extends OutboxError {
  readonly searched: string[];
}
