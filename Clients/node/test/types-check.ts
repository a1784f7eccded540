// Compile-only check of index.d.ts (never run): `tsc --noEmit -p Clients/node`.
// Imports through the package's own "exports" map, like a consumer would.
import {
  Outbox,
  METHODS,
  ErrorCodes,
  RpcError,
  InvalidParams,
  LeaseNotFound,
  ServerExitedError,
  TimeoutError,
  AbortError,
  findBinary,
  legacyLists,
} from 'push-outbox';
import type {
  CustomEventItem,
  ImportLegacyResult,
  ImportOutcome,
  FlushItemsResult,
  FlushUsersTrackResult,
  Item,
  ParsePayloadResult,
  SaveResult,
  StatusResult,
  User,
} from 'push-outbox';

const binary: string = findBinary({ env: { PUSH_OUTBOX_BIN: '/bin/true' } });
const ob: Outbox = await Outbox.spawn({ binary, store: '/tmp/outbox', args: ['--fsync', 'always'], timeoutMs: 5000 });

const user: User = { alias: { name: 'n', label: 'l' } };
const saved: SaveResult = await ob.saveCustomEvent({ name: 'push_opened', properties: { step: 1, tags: ['a'] }, user });
const seq: number = saved.seq;
const dup: true | undefined = saved.duplicate;
await ob.saveCustomAttribute({ key: 'visits', value: 1, op: 'inc' });
await ob.saveUserAttribute({ field: 'email', value: null, user: { externalId: 'u1' } }, { timeoutMs: 1000 });

const parsed: ParsePayloadResult = await ob.parsePayload({ payload: '{"ab":{}}', require: { count: 'integer' } });
const title: string | null | undefined = parsed.alert?.title;

const drained: FlushItemsResult = await ob.flushPending({ max: 10 });
const items: Item[] = drained.items;
for (const item of items) {
  if (item.kind === 'customEvent') {
    const event: CustomEventItem = item;
    const name: string = event.name;
    void name;
  } else if (item.kind === 'customAttribute') {
    const key: string = item.key;
    void key;
  } else {
    const field: string = item.field;
    void field;
  }
}
const track: FlushUsersTrackResult = await ob.flushPending({ format: 'usersTrack', leaseMs: 30_000 });
const acked: number = (await ob.ackFlush({ flushId: track.flushId })).acked;
const released: number = (await ob.releaseFlush({ flushId: drained.flushId })).released;

const controller = new AbortController();
const status: StatusResult = await ob.status({}, { signal: controller.signal });
const total: number = status.pending.total;
const doc = await ob.discover();
const names: string[] = doc.methods.map((m) => m.name);
const wire: 'rpc.discover' = METHODS.discover;

const raw = await ob.call<{ acked: number }>('ackFlush', { flushId: 'x' }, { signal: controller.signal, timeoutMs: 100 });
await ob.notify('status', {});

try {
  await ob.status();
} catch (err) {
  if (err instanceof InvalidParams) {
    const paths: string[] = err.errors.map((e) => e.path);
    void paths;
  } else if (err instanceof LeaseNotFound) {
    const code: number = err.code;
    void code;
  } else if (err instanceof RpcError) {
    const data: unknown = err.data;
    void data;
  } else if (err instanceof ServerExitedError) {
    const exit: number | null = err.exitCode;
    const tail: string = err.stderr;
    void exit, tail;
  } else if (err instanceof TimeoutError || err instanceof AbortError) {
    const method: string = err.method;
    void method;
  }
}

const storeFull: -32001 = ErrorCodes.StoreFull;
ob.on('exit', (code, signal) => void [code, signal]);
const code: number | null = await ob.close({ graceMs: 1000 });
const info = await ob.exited;

// @ts-expect-error: name is required
await ob.saveCustomEvent({ properties: {} });
// @ts-expect-error: exactly one identifier kind
const badUser: User = { brazeId: 1 };
// @ts-expect-error: unknown op
await ob.saveCustomAttribute({ key: 'k', value: 1, op: 'multiply' });

export const used = [seq, dup, title, acked, released, total, names, wire, raw, storeFull, code, info, badUser];

// importLegacy: the guide's App Group lists, picked out of a whole `plutil -convert json` object.
const imported: ImportLegacyResult = await ob.importLegacy({
  ...legacyLists({ pending_custom_events: [{ event_name: 'won' }], other: 1 }),
  user: { externalId: 'u1' },
});
const firstOutcome: ImportOutcome | undefined = imported.results[0];
const firstIds: string[] | undefined = firstOutcome?.ids;
const firstCode: number | undefined = firstOutcome?.error?.code;
void [imported.saved, imported.failed, firstIds, firstCode];

// push-outbox/testing, through the exports map.
import { startFakeBraze, startOutbox } from 'push-outbox/testing';
import type { FakeBraze, TestOutbox, TrackObject } from 'push-outbox/testing';
async function testKit(t: { after(fn: () => unknown): void }): Promise<void> {
  const braze: FakeBraze = await startFakeBraze({ t });
  const outbox: TestOutbox = await startOutbox({ t, braze, fixedClock: '2026-01-01T00:00:00Z', idSeed: 1 });
  await outbox.saveCustomEvent({ name: 'push_opened', user: { externalId: 'u1' } });
  await outbox.waitDelivered({ timeoutMs: 10_000 });
  const events: TrackObject[] = await braze.events({ user: 'u1' });
  await braze.failNext({ status: 429, retryAfter: 1 });
  void events;
}
void testKit;
