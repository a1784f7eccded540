// Types of push-outbox/testing (src/testing.js): a Braze fake and an outbox that delivers to it,
// for node:test, vitest, jest or any runner. Checked with `tsc --noEmit -p Clients/node`.

import type { Outbox, CloseOptions } from './index.js';

/** A test's context: node:test's (`after`) or vitest's (`onTestFinished`); cleanup runs when it ends. */
export interface TestContextLike {
  after?(fn: () => unknown): unknown;
  onTestFinished?(fn: () => unknown): unknown;
}

/** One object of a /users/track array, as Braze received it. */
export type TrackObject = Record<string, unknown>;

/** An external id, or identifier fields to match (`{ braze_id: 'b1' }`). */
export type UserMatch = string | Record<string, unknown>;

export interface FakeRequest {
  seq: number;
  at: string;
  method: string;
  path: string;
  /** Lower-case names; the bearer key masked. */
  headers: Record<string, string>;
  body?: unknown;
  bodyText?: string;
  /** null when the connection was dropped. */
  status: number | null;
  answer: unknown;
  delayMs: number;
  dropped: boolean;
  connection: number;
}

export interface FakeStats {
  requests: number;
  byStatus: Record<string, number>;
  dropped: number;
  inFlight: number;
  maxInFlight: number;
  connections: number;
  maxConnections: number;
  scriptLeft: number;
  rateLimit: string | null;
  delayMs: number;
}

export interface ObjectError {
  input_array: 'attributes' | 'events' | 'purchases';
  index: number;
  type?: string;
}

export interface FaultStep {
  status?: number;
  times?: number;
  retryAfter?: number;
  headers?: Record<string, string>;
  delayMs?: number;
  drop?: boolean;
  errors?: ObjectError[];
  body?: unknown;
}

export interface ScriptChange {
  steps?: FaultStep[];
  append?: boolean;
  /** "N/S": 429 above N requests per S seconds; null clears it. */
  rateLimit?: string | null;
  delayMs?: number;
}

export declare const TEST_API_KEY: string;

export declare class FakeBraze {
  readonly url: string;
  readonly port: number;
  readonly apiKey: string;
  requests(): Promise<FakeRequest[]>;
  objects(array: 'attributes' | 'events' | 'purchases', options?: { user?: UserMatch }): Promise<TrackObject[]>;
  events(options?: { user?: UserMatch }): Promise<TrackObject[]>;
  attributes(options?: { user?: UserMatch }): Promise<TrackObject[]>;
  purchases(options?: { user?: UserMatch }): Promise<TrackObject[]>;
  stats(): Promise<FakeStats>;
  failNext(step?: FaultStep & { status?: number }): Promise<void>;
  script(change: ScriptChange): Promise<void>;
  reset(): Promise<void>;
  close(): Promise<void>;
}

export interface StartFakeBrazeOptions {
  t?: TestContextLike;
  apiKey?: string;
  /** More `push-outbox fake-braze` flags, e.g. ['--delay-ms', '50']. */
  args?: readonly string[];
  binary?: string;
}

export interface StartOutboxOptions {
  t?: TestContextLike;
  /** Deliver to this fake. */
  braze?: FakeBraze;
  /** ISO 8601: every timestamp is this instant (retry backoff then never ends: keep it for tests without failures). */
  fixedClock?: string;
  idSeed?: number;
  args?: readonly string[];
  binary?: string;
  /** A directory to keep the store in (default: a temporary one, removed on close). */
  store?: string;
}

export interface TestOutbox extends Outbox {
  readonly store: string;
  readonly braze: FakeBraze | undefined;
  /** Resolves once nothing is pending; rejects saying what is pending and why. */
  waitDelivered(options?: { timeoutMs?: number }): Promise<void>;
  close(options?: CloseOptions): Promise<number | null>;
}

export declare function startFakeBraze(options?: StartFakeBrazeOptions): Promise<FakeBraze>;
export declare function startOutbox(options?: StartOutboxOptions): Promise<TestOutbox>;
