// Every wire method, through the client, against the real binary
// (started with --memory --fixed-clock 2026-01-01T00:00:00.000Z --id-seed 1).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, test } from 'node:test';
import { DeliveryNotConfigured, InvalidParams, LEGACY_LISTS, LeaseNotFound, legacyLists } from '../src/index.js';
import { FIXED_CLOCK, openrpcPath, rejectsWith, spawnReal } from './helpers.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Runs `fn` with a fresh in-memory server and closes it (asserting a clean exit). */
async function withServer(fn, options) {
  const ob = await spawnReal(options);
  try {
    await fn(ob);
  } finally {
    assert.equal(await ob.close(), 0, `server exited uncleanly; stderr:\n${ob.stderrTail}`);
  }
}

describe('status', () => {
  test('a fresh in-memory store', () =>
    withServer(async (ob) => {
      const status = await ob.status();
      assert.match(status.version, /^\d+\.\d+\.\d+/);
      assert.deepEqual(
        { ...status, version: 'x' },
        {
          health: 'ok',
          problems: [],
          version: 'x',
          store: null,
          pending: { total: 0, customEvent: 0, customAttribute: 0, userAttribute: 0 },
          bytes: 0,
          lastSnapshotAt: null,
          snapshotSeq: 0,
          journalBytes: 0,
          storeBytes: 0,
          maxStoreBytes: null,
          fsync: 'everysec',
          lease: null,
          recovery: [],
          deadLetters: 0,
          delivery: null,
          relay: null,
        },
      );
    }));

  test('params may be omitted on the wire (generic call)', () =>
    withServer(async (ob) => {
      const status = await ob.call('status');
      assert.equal(status.pending.total, 0);
    }));
});

describe('saves', () => {
  test('saveCustomEvent, saveCustomAttribute, saveUserAttribute', () =>
    withServer(async (ob) => {
      const event = await ob.saveCustomEvent({
        name: 'push_opened',
        properties: { step: 1 },
        user: { externalId: 'u1' },
      });
      assert.match(event.id, UUID_V7);
      assert.deepEqual({ ...event, id: 'x' }, { id: 'x', seq: 1, pending: 1 });

      const attribute = await ob.saveCustomAttribute({ key: 'visits', value: 1, op: 'inc', user: { brazeId: 'b1' } });
      assert.match(attribute.id, UUID_V7);
      assert.deepEqual({ ...attribute, id: 'x' }, { id: 'x', seq: 2, pending: 2 });

      const userAttribute = await ob.saveUserAttribute({ field: 'email', value: 'a@b.co' });
      assert.match(userAttribute.id, UUID_V7);
      assert.deepEqual({ ...userAttribute, id: 'x' }, { id: 'x', seq: 3, pending: 3 });

      assert.equal(new Set([event.id, attribute.id, userAttribute.id]).size, 3);
      const status = await ob.status();
      assert.deepEqual(status.pending, { total: 3, customEvent: 1, customAttribute: 1, userAttribute: 1 });
    }));

  test('a repeated client id is answered with duplicate: true and stored once', () =>
    withServer(async (ob) => {
      const first = await ob.saveCustomEvent({ name: 'x', id: 'client-1' });
      assert.deepEqual(first, { id: 'client-1', seq: 1, pending: 1 });
      const again = await ob.saveCustomEvent({ name: 'x', id: 'client-1' });
      assert.deepEqual(again, { id: 'client-1', seq: 1, pending: 1, duplicate: true });
      assert.equal((await ob.status()).pending.total, 1);
    }));

  test('U+2028, U+2029, NUL and astral characters round-trip through the store', () =>
    withServer(async (ob) => {
      const text = 'line\u2028sep\u2029para\u0085nel\u0000nul\u{1F600}';
      await ob.saveCustomEvent({ name: 'unicode', properties: { text } });
      const { items } = await ob.flushPending();
      assert.equal(items[0].properties.text, text);
    }));
});

describe('flushPending / ackFlush / releaseFlush', () => {
  async function saveThree(ob) {
    await ob.saveCustomEvent({ name: 'push_opened', properties: { step: 1 }, user: { externalId: 'u1' } });
    await ob.saveCustomAttribute({ key: 'visits', value: 1, op: 'inc', user: { externalId: 'u1' } });
    await ob.saveUserAttribute({ field: 'email', value: 'a@b.co' });
  }

  test('drain returns the items and removes exactly them', () =>
    withServer(async (ob) => {
      await saveThree(ob);
      const first = await ob.flushPending({ max: 2 });
      assert.equal(typeof first.flushId, 'string');
      assert.equal(first.leaseExpiresAt, undefined);
      assert.equal(first.remaining, 1);
      assert.deepEqual(
        first.items.map(({ id, ...rest }) => (assert.match(id, UUID_V7), rest)),
        [
          {
            seq: 1,
            kind: 'customEvent',
            savedAt: FIXED_CLOCK,
            deliveryCount: 0,
            user: { externalId: 'u1' },
            name: 'push_opened',
            properties: { step: 1 },
            time: FIXED_CLOCK,
          },
          {
            seq: 2,
            kind: 'customAttribute',
            savedAt: FIXED_CLOCK,
            deliveryCount: 0,
            user: { externalId: 'u1' },
            key: 'visits',
            op: 'inc',
            value: 1,
          },
        ],
      );
      const second = await ob.flushPending({});
      assert.equal(second.remaining, 0);
      assert.deepEqual(
        second.items.map(({ id, ...rest }) => rest),
        [{ seq: 3, kind: 'userAttribute', savedAt: FIXED_CLOCK, deliveryCount: 0, field: 'email', value: 'a@b.co' }],
      );
      assert.notEqual(second.flushId, first.flushId);
      assert.equal((await ob.status()).pending.total, 0);
      assert.deepEqual((await ob.flushPending()).items, []);
    }));

  test('lease, repeat, release, lease again (deliveryCount 1), ack, ack again', () =>
    withServer(async (ob) => {
      await saveThree(ob);
      const lease = await ob.flushPending({ leaseMs: 60_000 });
      assert.equal(lease.items.length, 3);
      assert.equal(lease.remaining, 0);
      assert.equal(lease.leaseExpiresAt, '2026-01-01T00:01:00.000Z');
      assert.deepEqual(await ob.flushPending({ leaseMs: 60_000 }), lease, 'repeat while live: same lease');
      assert.deepEqual((await ob.status()).lease, {
        flushId: lease.flushId,
        count: 3,
        expiresAt: '2026-01-01T00:01:00.000Z',
      });

      assert.deepEqual(await ob.releaseFlush({ flushId: lease.flushId }), { released: 3 });
      assert.equal((await ob.status()).lease, null);
      await rejectsWith(ob.releaseFlush({ flushId: lease.flushId }), LeaseNotFound);

      const again = await ob.flushPending({ leaseMs: 60_000 });
      assert.notEqual(again.flushId, lease.flushId);
      assert.deepEqual(
        again.items.map((item) => [item.seq, item.deliveryCount]),
        [
          [1, 1],
          [2, 1],
          [3, 1],
        ],
      );
      assert.deepEqual(await ob.ackFlush({ flushId: again.flushId }), { acked: 3 });
      assert.deepEqual(await ob.ackFlush({ flushId: again.flushId }), { acked: 0 });
      assert.equal((await ob.status()).pending.total, 0);
    }));

  test('ackFlush / releaseFlush with an unknown flushId reject with LeaseNotFound (-32004)', () =>
    withServer(async (ob) => {
      await rejectsWith(ob.ackFlush({ flushId: 'no-such-flush' }), LeaseNotFound, (err) => {
        assert.equal(err.code, -32004);
        assert.equal(err.method, 'ackFlush');
      });
      await rejectsWith(ob.releaseFlush({ flushId: 'no-such-flush' }), LeaseNotFound);
    }));

  test('usersTrack format groups by identifier and skips items without one', () =>
    withServer(async (ob) => {
      await saveThree(ob);
      const track = await ob.flushPending({ format: 'usersTrack' });
      assert.equal(typeof track.flushId, 'string');
      assert.equal(track.items, undefined);
      assert.ok(Array.isArray(track.requests) && track.requests.length >= 1);
      const events = track.requests.flatMap((r) => r.events);
      const attributes = track.requests.flatMap((r) => r.attributes);
      assert.equal(events.length, 1);
      assert.equal(events[0].name, 'push_opened');
      assert.equal(events[0].external_id, 'u1');
      assert.equal(attributes.length, 1);
      assert.equal(attributes[0].external_id, 'u1');
      assert.equal(track.skipped.length, 1);
      assert.equal(track.skipped[0].reason, 'no_identifier');
      assert.match(track.skipped[0].id, UUID_V7);

      // An item no identifier can fill became a dead letter, so a drain loop ends; requeue it.
      const dead = await ob.listDeadLetters({ max: 10 });
      assert.equal(dead.total, 1);
      assert.equal(dead.deadLetters[0].reason, 'no_identifier');
      assert.equal(dead.deadLetters[0].item.id, track.skipped[0].id);
      assert.deepEqual(await ob.requeueDeadLetters({ ids: [track.skipped[0].id] }), { requeued: 1 });

      const withDefault = await ob.flushPending({ format: 'usersTrack', defaultUser: { externalId: 'fallback' } });
      assert.deepEqual(withDefault.skipped, []);
      assert.deepEqual(
        withDefault.requests.flatMap((r) => r.attributes),
        [{ external_id: 'fallback', email: 'a@b.co' }],
      );
    }));
});

describe('dead letters and delivery', () => {
  test('drop a dead letter; deliverPending without an endpoint is DeliveryNotConfigured', () =>
    withServer(async (ob) => {
      const anon = await ob.saveCustomEvent({ name: 'anonymous' });
      await ob.flushPending({ format: 'usersTrack' });
      assert.equal((await ob.status()).deadLetters, 1);
      assert.deepEqual(await ob.dropDeadLetters({ ids: [anon.id] }), { dropped: 1 });
      assert.equal((await ob.listDeadLetters()).total, 0);
      await assert.rejects(ob.deliverPending(), DeliveryNotConfigured);
    }));
});

describe('importLegacy', () => {
  // What `plutil -convert json` gives for an App Group written by Braze's push guide.
  const appGroup = {
    NSLanguages: ['en'],
    pending_custom_events: [{ event_name: 'push_game_won', score: 12 }, { score: 3 }],
    pending_custom_attributes: [{ favorite_drink: 'latte' }],
    pending_user_attributes: [{ email: 'ann@example.com' }],
  };

  test('saves the valid elements and reports the rest with the save method\'s error', () =>
    withServer(async (ob) => {
      const params = legacyLists(appGroup);
      assert.deepEqual(Object.keys(params), LEGACY_LISTS);
      const out = await ob.importLegacy({ ...params, user: { externalId: 'u1' } });
      assert.deepEqual([out.saved, out.failed, out.pending], [3, 1, 3]);
      assert.deepEqual(
        out.results.map((r) => [r.list, r.index, r.method]),
        [
          ['pending_custom_events', 0, 'saveCustomEvent'],
          ['pending_custom_events', 1, 'saveCustomEvent'],
          ['pending_custom_attributes', 0, 'saveCustomAttribute'],
          ['pending_user_attributes', 0, 'saveUserAttribute'],
        ],
      );
      const rejected = out.results[1];
      assert.equal(rejected.ids, undefined);
      assert.equal(rejected.error.code, -32602);
      assert.deepEqual(rejected.error.data.errors.map((e) => e.code), ['missing']);
      const { items } = await ob.flushPending();
      assert.deepEqual(items.map((i) => i.id), out.results.filter((r) => r.ids).map((r) => r.ids[0]));
      assert.deepEqual(items[0].properties, { score: 12 });
      assert.deepEqual(items[0].user, { externalId: 'u1' });

      // The element's error is what the save method answers for the same content.
      const bad = await ob.importLegacy({ pending_user_attributes: [{ email: 'x' }] });
      const direct = await rejectsWith(ob.saveUserAttribute({ field: 'email', value: 'x' }), InvalidParams);
      assert.deepEqual(bad.results[0].error.data, direct.data);
    }));

  test('a list that is not an array, or too many elements, refuses the whole call', () =>
    withServer(
      async (ob) => {
        const tooMany = await rejectsWith(ob.importLegacy(legacyLists(appGroup)), InvalidParams);
        assert.deepEqual(tooMany.errors.map((e) => [e.code, e.max, e.count]), [['too_many_elements', 2, 4]]);
        const notArray = await rejectsWith(ob.importLegacy({ pending_custom_events: { event_name: 'x' } }), InvalidParams);
        assert.deepEqual(notArray.errors.map((e) => e.code), ['wrong_type']);
        assert.deepEqual(await ob.importLegacy(), { results: [], saved: 0, failed: 0, pending: 0 });
        assert.equal((await ob.status()).pending.total, 0);
      },
      { args: ['--max-batch', '2'] },
    ));
});

describe('parsePayload', () => {
  const payload = {
    aps: { alert: { title: 'T', body: 'B' }, category: 'lab_register', 'content-available': 1 },
    ab: { att: { url: 'https://example.com/y.jpg', type: 'jpg' } },
    ab_uri: 'app://x',
    braze_id: 'b1',
    count: '3',
    cert_title: 'hi',
  };
  const expected = {
    braze: true,
    silent: true,
    internal: false,
    pushStory: false,
    category: 'lab_register',
    threadId: null,
    mutableContent: false,
    alert: { title: 'T', subtitle: null, body: 'B' },
    badge: null,
    sound: null,
    deepLink: 'app://x',
    attachment: { url: 'https://example.com/y.jpg', type: 'jpg' },
    brazeId: 'b1',
    extras: { count: '3', cert_title: 'hi' },
    values: { count: 3 },
    warnings: [],
  };

  test('an object payload', () =>
    withServer(async (ob) => {
      const { diagnostics, ...rest } = await ob.parsePayload({ payload, require: { count: 'integer' } });
      assert.deepEqual(rest, expected);
      assert.deepEqual(
        diagnostics.map(({ code, severity, path }) => ({ code, severity, path })),
        [
          { code: 'silent-with-alert', severity: 'warning', path: 'aps.content-available' },
          { code: 'attachment-needs-mutable-content', severity: 'error', path: 'ab.att' },
        ],
      );
    }));

  test('a payload given as a JSON string', () =>
    withServer(async (ob) => {
      const text = JSON.stringify(payload);
      const { diagnostics, ...rest } = await ob.parsePayload({ payload: text, require: { count: 'integer' } });
      assert.deepEqual(rest, expected);
      const att = diagnostics.find((d) => d.code === 'attachment-needs-mutable-content');
      assert.equal(Buffer.from(text).subarray(att.start, att.end).toString(), '"att"');
    }));

  test('required-key failures list every key as InvalidParams errors', () =>
    withServer(async (ob) => {
      await rejectsWith(
        ob.parsePayload({ payload: { a: 1 }, require: { count: 'integer', a: 'string' } }),
        InvalidParams,
        (err) => {
          assert.deepEqual(
            err.errors.map(({ path, key, code, expected }) => ({ path, key, code, expected })),
            [
              { path: 'payload.count', key: 'count', code: 'missing', expected: 'integer' },
              { path: 'payload.a', key: 'a', code: 'wrong_type', expected: 'string' },
            ],
          );
          assert.equal(err.errors[1].got, 'integer');
        },
      );
    }));
});

describe('rpc.discover', () => {
  test('discover() returns Protocol/openrpc.json', () =>
    withServer(async (ob) => {
      const expected = JSON.parse(fs.readFileSync(openrpcPath, 'utf8'));
      assert.deepEqual(await ob.discover(), expected);
    }));
});

describe('notifications', () => {
  test('notify() is executed but never answered', () =>
    withServer(async (ob) => {
      const unmatched = [];
      ob.on('unmatched', (message) => unmatched.push(message));
      ob.on('protocolError', (problem) => unmatched.push(problem));
      await ob.notify('saveCustomEvent', { name: 'fire_and_forget' });
      await ob.notify('noSuchMethod', {});
      await ob.notify('saveCustomEvent', {}); // invalid params: still no answer
      const status = await ob.status();
      assert.equal(status.pending.total, 1);
      assert.deepEqual(unmatched, []);
    }));
});
