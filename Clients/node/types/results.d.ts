// Results of status, deliverPending, the dead-letter methods, importLegacy and rpc.discover.
// Part of the push-outbox Node client's types; import them from the package (index.d.ts re-exports them).

import type { Item, JsonObject, JsonValue, User, Warning } from './wire.js';

// MARK: - status / rpc.discover

export interface StatusResult {
  /** `failing` while the journal cannot be written or flushed, `degraded` while any other problem is listed. */
  health: 'ok' | 'degraded' | 'failing';
  problems: HealthProblem[];
  version: string;
  store: string | null;
  pending: { total: number; customEvent: number; customAttribute: number; userAttribute: number };
  bytes: number;
  lastSnapshotAt: string | null;
  snapshotSeq: number;
  journalBytes: number;
  /** The whole store directory's bytes, as `--max-store-bytes` counts them. */
  storeBytes: number;
  maxStoreBytes: number | null;
  fsync: string;
  lease: { flushId: string; count: number; expiresAt: string } | null;
  recovery: Array<{ code: string; message: string; [key: string]: JsonValue }>;
  /** Dead letters held (not counted in `pending`). */
  deadLetters: number;
  /** Null when delivery to Braze is not configured. */
  delivery: DeliveryStatus | null;
  /** `--relay nats://…`: pending items published to a NATS stream in the background; null without it. */
  relay: RelayStatus | null;
}

export interface RelayStatus {
  /** `nats://HOST:PORT`, never a token. */
  to: string;
  stream: string;
  state: 'connecting' | 'connected' | 'backoff';
  published: number;
  duplicates: number;
  deadLettered: number;
  inFlight: number;
  lastError: string | null;
  lastPublishAt: string | null;
}

/** `status.delivery.fleet`, with `--deliver --from nats://…`. */
export interface FleetStatus {
  state: 'connecting' | 'connected' | 'stopped';
  role: 'leader' | 'standby';
  leaderSince: string | null;
  stream: { name: string; messages: number; bytes: number };
  delivered: number;
  deadLettered: number;
  givenBack: number;
  lastError: string | null;
}

export interface HealthProblem {
  reason:
    | 'journal_failing'
    | 'data_quarantined'
    | 'store_near_cap'
    | 'delivery_stopped'
    | 'delivery_retrying'
    | 'pending_too_old';
  /** When the condition began (or was first seen). */
  since: string;
  detail: string;
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
  /** Only with `--deliver --from nats://…`: this process is one of a fleet's deliverers. */
  fleet?: FleetStatus;
}

// MARK: - delivery and dead letters

/** A progress token: a string or an integer. */
export type ProgressToken = string | number;

export interface DeliverPendingParams {
  max?: number;
  /** LSP work-done progress: `$/progress` notifications carry this token (CallOptions.onProgress sets it). */
  workDoneToken?: ProgressToken;
  /** MCP request metadata: with `progressToken`, `notifications/progress` notifications are sent. */
  _meta?: { progressToken?: ProgressToken; [key: string]: unknown };
}

/** The `value` of one `$/progress` notification for a long call (Protocol/README.md, "Long calls"). */
export interface WorkDoneProgress {
  kind: 'begin' | 'report' | 'end';
  title?: string;
  cancellable?: boolean;
  message?: string;
  percentage?: number;
}

export interface DeliverPendingResult {
  delivered: number;
  deadLettered: number;
  retrying: number;
  remaining: number;
}

export interface DeadLetter {
  reason: string;
  item: Item;
  /** With `fleet: true`: the message's sequence in `<stream>_DEAD`. */
  seq?: number;
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

export interface OpenRpcDocument {
  openrpc: string;
  info: { title: string; version: string; [key: string]: JsonValue };
  methods: Array<{ name: string; [key: string]: JsonValue }>;
  [key: string]: JsonValue;
}
