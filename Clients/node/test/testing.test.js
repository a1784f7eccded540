// push-outbox/testing with node:test: the save → deliver → assert in a few lines, cleanup on
// test end, fail_next and waitDelivered's reasons, through the package's own exports map.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startFakeBraze, startOutbox } from 'push-outbox/testing';
import { realBinary } from './helpers.js';

test('an event saved reaches the fake Braze', async (t) => {
  const binary = realBinary();
  const braze = await startFakeBraze({ t, binary });
  const outbox = await startOutbox({ t, braze, binary });
  await outbox.saveCustomEvent({ name: 'push_opened', properties: { step: 1 }, user: { externalId: 'u1' } });
  await outbox.waitDelivered({ timeoutMs: 10_000 });
  assert.deepEqual(await braze.events({ user: 'u1' }), [
    { external_id: 'u1', name: 'push_opened', time: (await braze.events())[0].time, properties: { step: 1 } },
  ]);
});

test('both are stopped and the store removed when the test ends', async () => {
  const binary = realBinary();
  let braze, outbox;
  await test('inner', async (t) => {
    braze = await startFakeBraze({ t, binary });
    outbox = await startOutbox({ t, braze, binary });
  });
  assert.equal(outbox.exitCode, 0);
  assert.equal(fs.existsSync(outbox.store), false);
  assert.notEqual(braze.child.exitCode ?? braze.child.signalCode, null);
});

test('a scripted failure is retried; a fixed clock and id seed are reproducible', async (t) => {
  const binary = realBinary();
  const braze = await startFakeBraze({ t, binary });
  await braze.failNext({ status: 503 });
  const outbox = await startOutbox({ t, braze, binary });
  await outbox.saveCustomEvent({ name: 'a', user: { externalId: 'u1' } });
  await outbox.waitDelivered();
  assert.deepEqual((await braze.requests()).map((r) => r.status), [503, 201]);
  const fixed = { t, binary, idSeed: 3, fixedClock: '2026-01-01T00:00:00Z' };
  const [one, two] = [await startOutbox(fixed), await startOutbox(fixed)];
  const ids = [await one.saveCustomEvent({ name: 'a' }), await two.saveCustomEvent({ name: 'a' })].map((r) => r.id);
  assert.equal(ids[0], ids[1]);
});

test('waitDelivered says what is pending and why', async (t) => {
  const binary = realBinary();
  const braze = await startFakeBraze({ t, binary });
  await braze.failNext({ status: 401, times: 100 });
  const outbox = await startOutbox({ t, braze, binary });
  await outbox.saveCustomEvent({ name: 'a', user: { externalId: 'u1' } });
  await assert.rejects(outbox.waitDelivered({ timeoutMs: 500 }), /1 item\(s\) still pending[\s\S]*configError[\s\S]*401/);
});
