// Hand-written types for the push-outbox Node client (src/index.js, src/errors.js).
// Wire shapes follow Protocol/openrpc.json. Checked with `tsc --noEmit -p Clients/node`.

// Layout: the wire shapes are in types/wire.d.ts, the status/delivery/import results in
// types/results.d.ts, the error classes in types/errors.d.ts; this file re-exports them all.

export * from './types/wire.js';
export * from './types/results.js';
export * from './types/errors.js';

import type { DeliverPendingParams, DeliverPendingResult, ImportLegacyParams, ImportLegacyResult, LegacyList, ListDeadLettersResult, OpenRpcDocument, StatusResult, WorkDoneProgress } from './types/results.js';
import type { AckFlushResult, FlushItemsResult, FlushPendingParams, FlushUsersTrackResult, JsonObject, ParsePayloadParams, ParsePayloadResult, ReleaseFlushResult, SaveCustomAttributeParams, SaveCustomEventParams, SaveResult, SaveUserAttributeParams } from './types/wire.js';

// MARK: - Options

export interface SpawnOptions {
  /** Path of the push-outbox executable. Default: see findBinary(). */
  binary?: string;
  /** Store directory (`--store PATH`). */
  store?: string;
  /** Keep everything in memory (`--memory`). */
  memory?: boolean;
  /** Extra command-line arguments, e.g. ['--fsync', 'always']. */
  args?: readonly string[];
  /** Default per-call timeout in ms (default 30000). 0 or Infinity: no timeout. */
  timeoutMs?: number;
  /** Environment of the server process (default: process.env). */
  env?: Record<string, string | undefined>;
  cwd?: string;
  /**
   * Requests longer than this many UTF-8 bytes are rejected locally with ParseError
   * (data.reason "line_too_long"). Default: `--max-line-bytes` from `args`, else 16 MiB. 0 disables.
   */
  maxLineBytes?: number;
  /** How much of the server's stderr to keep for ServerExitedError (default 64 KiB). */
  stderrTailBytes?: number;
}

export interface CallOptions {
  /**
   * Aborting rejects the call with AbortError (TimeoutError for AbortSignal.timeout()) and sends
   * `$/cancelRequest`: a long call (deliverPending) stops starting new work on the server.
   */
  signal?: AbortSignal;
  /** Called with each `$/progress` value of this call (the request then carries `workDoneToken`). */
  onProgress?: (value: WorkDoneProgress) => void;
  /** Overrides the client's default timeout for this call. 0 or Infinity: no timeout. */
  timeoutMs?: number;
}

export interface CloseOptions {
  /** How long to wait for a clean exit after closing stdin (default 5000 ms). */
  graceMs?: number;
  /** How long to wait after SIGTERM before SIGKILL (default 2000 ms). */
  termMs?: number;
}

export interface FindBinaryOptions {
  binary?: string;
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Where the upward search for .build/{release,debug}/push-outbox starts. Default: [cwd, this module's directory]. */
  searchDirs?: string[];
  /** The binary bundled in the package (checked after PUSH_OUTBOX_BIN, before PATH). Default: BUNDLED_BINARY. */
  bundled?: string;
}

/** Where a package built by `.ci/package` carries its own binary (`<package>/bin/push-outbox`). */
export declare const BUNDLED_BINARY: string;

export declare const LEGACY_LISTS: readonly LegacyList[];
/** The `pending_*` lists present in an App Group object; every other key is left out. */
export declare function legacyLists(defaults: { [key: string]: unknown } | null | undefined): ImportLegacyParams;

// MARK: - Client

/** camelCase client method -> wire method name. */
export declare const METHODS: Readonly<{
  parsePayload: 'parsePayload';
  saveCustomEvent: 'saveCustomEvent';
  saveCustomAttribute: 'saveCustomAttribute';
  saveUserAttribute: 'saveUserAttribute';
  flushPending: 'flushPending';
  ackFlush: 'ackFlush';
  releaseFlush: 'releaseFlush';
  status: 'status';
  deliverPending: 'deliverPending';
  listDeadLetters: 'listDeadLetters';
  requeueDeadLetters: 'requeueDeadLetters';
  dropDeadLetters: 'dropDeadLetters';
  importLegacy: 'importLegacy';
  discover: 'rpc.discover';
  cancelRequest: '$/cancelRequest';
  cancelled: 'notifications/cancelled';
}>;

export declare const BINARY_NAME: 'push-outbox';
export declare const DEFAULT_TIMEOUT_MS: number;
export declare const DEFAULT_MAX_LINE_BYTES: number;

/** Finds the push-outbox executable; throws BinaryNotFoundError. */
export declare function findBinary(options?: FindBinaryOptions): string;

export interface ExitInfo {
  exitCode: number | null;
  signal: string | null;
}

/** The subset of Node's ChildProcess this package exposes. */
export interface OutboxChildProcess {
  readonly pid?: number;
  kill(signal?: string | number): boolean;
}

export declare class Outbox {
  /** Spawns the server. Rejects if the executable cannot be started. */
  static spawn(options?: SpawnOptions): Promise<Outbox>;
  private constructor();

  readonly child: OutboxChildProcess;
  readonly binary: string;
  readonly pid: number | undefined;
  readonly exitCode: number | null;
  readonly signalCode: string | null;
  readonly pendingCount: number;
  readonly stderrTail: string;
  readonly isExited: boolean;
  /** Resolves once the process is gone and every pending call has been settled. */
  readonly exited: Promise<ExitInfo>;

  parsePayload(params: ParsePayloadParams, options?: CallOptions): Promise<ParsePayloadResult>;
  saveCustomEvent(params: SaveCustomEventParams, options?: CallOptions): Promise<SaveResult>;
  saveCustomAttribute(params: SaveCustomAttributeParams, options?: CallOptions): Promise<SaveResult>;
  saveUserAttribute(params: SaveUserAttributeParams, options?: CallOptions): Promise<SaveResult>;
  flushPending(
    params: FlushPendingParams & { format: 'usersTrack' },
    options?: CallOptions,
  ): Promise<FlushUsersTrackResult>;
  flushPending(params?: FlushPendingParams & { format?: 'items' }, options?: CallOptions): Promise<FlushItemsResult>;
  ackFlush(params: { flushId: string }, options?: CallOptions): Promise<AckFlushResult>;
  releaseFlush(params: { flushId: string }, options?: CallOptions): Promise<ReleaseFlushResult>;
  status(params?: Record<string, never>, options?: CallOptions): Promise<StatusResult>;
  /** A long call: answered when its pass ends, while other calls go on (replies are matched by id). */
  deliverPending(params?: DeliverPendingParams, options?: CallOptions): Promise<DeliverPendingResult>;
  listDeadLetters(params?: { max?: number; fleet?: boolean }, options?: CallOptions): Promise<ListDeadLettersResult>;
  requeueDeadLetters(params?: { ids?: string[]; fleet?: boolean }, options?: CallOptions): Promise<{ requeued: number }>;
  dropDeadLetters(params: { ids: string[]; fleet?: boolean }, options?: CallOptions): Promise<{ dropped: number }>;
  importLegacy(params?: ImportLegacyParams, options?: CallOptions): Promise<ImportLegacyResult>;
  /** rpc.discover */
  discover(params?: Record<string, never>, options?: CallOptions): Promise<OpenRpcDocument>;
  /** `$/cancelRequest`, a notification: cancels the long call with this id. Resolves once written. */
  cancelRequest(params: { id: number | string }): Promise<void>;
  /** `notifications/cancelled` (MCP's form of cancelRequest). Resolves once written. */
  cancelled(params: { requestId: number | string; reason?: string }): Promise<void>;

  /** Any method; `params` is omitted from the wire when undefined. */
  call<T = unknown>(method: string, params?: object | unknown[], options?: CallOptions): Promise<T>;
  /** A notification: never answered. Resolves once written. */
  notify(method: string, params?: object | unknown[]): Promise<void>;
  /** Ends stdin, waits, then SIGTERM, then SIGKILL. Resolves with the exit code. */
  close(options?: CloseOptions): Promise<number | null>;

  on(event: 'exit', listener: (exitCode: number | null, signal: string | null) => void): this;
  on(event: 'stderr', listener: (chunk: Uint8Array) => void): this;
  on(event: 'unmatched' | 'notification', listener: (message: JsonObject) => void): this;
  on(event: 'protocolError', listener: (problem: unknown) => void): this;
  on(event: 'stdinError' | 'processError', listener: (error: Error) => void): this;
  once(event: 'exit', listener: (exitCode: number | null, signal: string | null) => void): this;
  once(event: string, listener: (...args: any[]) => void): this;
  off(event: string, listener: (...args: any[]) => void): this;
}
