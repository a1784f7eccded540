// Wire shapes shared by the methods, and the params/results of parsePayload, the saves and the flush
// methods. Follow Protocol/openrpc.json.
// Part of the push-outbox Node client's types; import them from the package (index.d.ts re-exports them).

// MARK: - JSON

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

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
  /** The payload rule table's findings, as `push-outbox lsp` reports them in an editor. */
  diagnostics: PayloadDiagnostic[];
}

/** One finding of the payload rules: `start`/`end` (UTF-8 byte offsets) only for a payload given as text. */
export interface PayloadDiagnostic {
  code: string;
  severity: 'error' | 'warning' | 'information' | 'hint';
  path: string;
  message: string;
  start?: number;
  end?: number;
  href?: string;
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
