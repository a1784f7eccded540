// Hand-written types for the push-outbox Node client (src/index.js, src/errors.js).
// Wire shapes follow Protocol/openrpc.json. Checked with `tsc --noEmit -p Clients/node`.

// MARK: - JSON

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

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
  /** Aborting rejects the call with AbortError (TimeoutError for AbortSignal.timeout()). */
  signal?: AbortSignal;
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

// MARK: - Shared wire types

/** Exactly one identifier. */
export type User =
  | { externalId: string }
  | { brazeId: string }
  | { alias: { name: string; label: string } }
  | { email: string }
  | { phone: string };

export interface Warning {
  code: string;
  path?: string;
  key?: string;
  message: string;
}

// MARK: - parsePayload

export type PayloadValueType =
  | 'string'
  | 'integer'
  | 'number'
  | 'boolean'
  | 'object'
  | 'array'
  | 'url'
  | 'date'
  | 'datetime';

export interface ParsePayloadParams {
  /** The push userInfo, as an object or as a string holding a JSON object. */
  payload: JsonObject | string;
  /** Keys that must be present, with their expected type. */
  require?: Record<string, PayloadValueType>;
  categories?: string[];
}

export interface ParsePayloadResult {
  braze: boolean;
  silent: boolean;
  internal: boolean;
  pushStory: boolean;
  category: string | null;
  threadId: string | null;
  mutableContent: boolean;
  alert: { title: string | null; subtitle: string | null; body: string | null } | null;
  badge: number | null;
  sound: string | null;
  deepLink: string | null;
  attachment: { url: string; type: string | null } | null;
  brazeId: string | null;
  /** Every top-level key except aps, ab, ab_uri and braze_id. */
  extras: JsonObject;
  /** The `require`d keys, typed. */
  values: JsonObject;
  warnings: Warning[];
}

// MARK: - Saves

interface SaveCommon {
  user?: User;
  /** Client-chosen id; a repeat returns `duplicate: true`. */
  id?: string;
}

export interface SaveCustomEventParams extends SaveCommon {
  name: string;
  properties?: JsonObject;
  /** ISO 8601. */
  time?: string;
}

export type AttributeOp = 'set' | 'inc' | 'add' | 'remove' | 'unset';

export interface SaveCustomAttributeParams extends SaveCommon {
  key: string;
  value: JsonValue;
  op?: AttributeOp;
}

export interface SaveUserAttributeParams extends SaveCommon {
  field: string;
  value: string | null;
}

export interface SaveResult {
  id: string;
  seq: number;
  /** Pending items after this save. */
  pending: number;
  duplicate?: true;
  warnings?: Warning[];
}

// MARK: - Flush

export interface FlushPendingParams {
  max?: number;
  format?: 'items' | 'usersTrack';
  /** Lease instead of drain: items stay until ackFlush, or come back after the lease. */
  leaseMs?: number;
  defaultUser?: User;
}

interface ItemCommon {
  id: string;
  seq: number;
  /** ISO 8601 UTC with milliseconds. */
  savedAt: string;
  /** 0 the first time an item is handed out. */
  deliveryCount: number;
  user?: User;
  superseded?: true;
}

export interface CustomEventItem extends ItemCommon {
  kind: 'customEvent';
  name: string;
  properties: JsonObject;
  time: string;
}

export interface CustomAttributeItem extends ItemCommon {
  kind: 'customAttribute';
  key: string;
  op: AttributeOp;
  value: JsonValue;
}

export interface UserAttributeItem extends ItemCommon {
  kind: 'userAttribute';
  field: string;
  value: string | null;
}

export type Item = CustomEventItem | CustomAttributeItem | UserAttributeItem;

export interface FlushItemsResult {
  flushId: string;
  items: Item[];
  remaining: number;
  /** Present when `leaseMs` was given. */
  leaseExpiresAt?: string;
}

export interface UsersTrackRequest {
  attributes: JsonObject[];
  events: JsonObject[];
}

export interface FlushUsersTrackResult {
  flushId: string;
  requests: UsersTrackRequest[];
  skipped: { id: string; reason: 'missing_identifier' | (string & {}) }[];
  remaining: number;
  leaseExpiresAt?: string;
}

export interface AckFlushResult {
  acked: number;
}

export interface ReleaseFlushResult {
  released: number;
}

// MARK: - status / rpc.discover

export interface StatusResult {
  version: string;
  store: string | null;
  pending: { total: number; customEvent: number; customAttribute: number; userAttribute: number };
  bytes: number;
  lastSnapshotAt: string | null;
  snapshotSeq: number;
  journalBytes: number;
  fsync: string;
  lease: { flushId: string; count: number; expiresAt: string } | null;
  recovery: Array<{ code: string; message: string; [key: string]: JsonValue }>;
  /** Dead letters held (not counted in `pending`). */
  deadLetters: number;
  /** Null when delivery to Braze is not configured. */
  delivery: DeliveryStatus | null;
}

export interface DeliveryStatus {
  background: boolean;
  delivered: number;
  inFlight: number;
  retrying: number;
  nextAttemptAt: string | null;
  deadLettered: number;
  lastError: string | null;
  configError: string | null;
  rate: string;
  recentRequests: number;
}

// MARK: - delivery and dead letters

export interface DeliverPendingResult {
  delivered: number;
  deadLettered: number;
  retrying: number;
  remaining: number;
}

export interface DeadLetter {
  reason: string;
  item: Item;
}

export interface ListDeadLettersResult {
  deadLetters: DeadLetter[];
  total: number;
}

// MARK: - importLegacy

export type LegacyList = 'pending_custom_events' | 'pending_custom_attributes' | 'pending_user_attributes';

/** The guide's App Group arrays, as `plutil -convert json` gives them (elements are checked by the server). */
export interface ImportLegacyParams {
  /** `{"event_name" | "Event Name": name, ...flat properties}` dictionaries. */
  pending_custom_events?: JsonValue[];
  /** `{key: value}` dictionaries: one `saveCustomAttribute` per key. */
  pending_custom_attributes?: JsonValue[];
  /** `{"email": value}`: the Swift `UserAttribute` Codable shape. */
  pending_user_attributes?: JsonValue[];
  /** The user every imported item belongs to. */
  user?: User;
}

export interface ImportOutcome {
  list: LegacyList;
  index: number;
  method: 'saveCustomEvent' | 'saveCustomAttribute' | 'saveUserAttribute';
  /** The saved items' ids (one per key for a custom attribute dictionary); absent when refused. */
  ids?: string[];
  /** The custom attribute key that failed, in a dictionary of several. */
  key?: string;
  /** What the save method answered: -32602 with `data.errors`, or a store refusal. */
  error?: { code: number; message: string; data?: JsonObject };
  warnings?: Warning[];
}

export interface ImportLegacyResult {
  results: ImportOutcome[];
  saved: number;
  failed: number;
  pending: number;
}

export declare const LEGACY_LISTS: readonly LegacyList[];
/** The `pending_*` lists present in an App Group object; every other key is left out. */
export declare function legacyLists(defaults: { [key: string]: unknown } | null | undefined): ImportLegacyParams;

export interface OpenRpcDocument {
  openrpc: string;
  info: { title: string; version: string; [key: string]: JsonValue };
  methods: Array<{ name: string; [key: string]: JsonValue }>;
  [key: string]: JsonValue;
}

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
  deliverPending(params?: { max?: number }, options?: CallOptions): Promise<DeliverPendingResult>;
  listDeadLetters(params?: { max?: number }, options?: CallOptions): Promise<ListDeadLettersResult>;
  requeueDeadLetters(params?: { ids?: string[] }, options?: CallOptions): Promise<{ requeued: number }>;
  dropDeadLetters(params: { ids: string[] }, options?: CallOptions): Promise<{ dropped: number }>;
  importLegacy(params?: ImportLegacyParams, options?: CallOptions): Promise<ImportLegacyResult>;
  /** rpc.discover */
  discover(params?: Record<string, never>, options?: CallOptions): Promise<OpenRpcDocument>;

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

// MARK: - Errors

export declare const ErrorCodes: Readonly<{
  ParseError: -32700;
  InvalidRequest: -32600;
  MethodNotFound: -32601;
  InvalidParams: -32602;
  InternalError: -32603;
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
