// Long calls against the real binary and a local Braze stub (Protocol/README.md, "Long calls"):
// replies out of request order, cancelling with an AbortSignal, and onProgress.
// The stub holds its answers behind a gate the test opens, so every ordering is forced by the test.
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, test } from 'node:test';
import { AbortError, Outbox, ParseError, RequestCancelled } from '../src/index.js';
import { realBinary, rejectsWith } from './helpers.js';

/** A Braze /users/track stand-in on 127.0.0.1: counts requests, answers 201 once `open()` ran (or after `stallMs`). */
async function brazeStub({ gated = true, stallMs = 0 } = {}) {
  let open = !gated;
  const waiting = [];
  const stub = { requests: 0, inFlight: 0 };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      stub.requests += 1;
      stub.inFlight += 1;
      const answer = () =>
        setTimeout(() => {
          stub.inFlight -= 1;
          res.writeHead(201, { 'Content-Type': 'application/json' }).end('{"message":"success"}');
        }, stallMs);
      if (open) answer();
      else waiting.push(answer);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  stub.url = `http://127.0.0.1:${server.address().port}`;
  stub.open = () => {
    open = true;
    for (const answer of waiting.splice(0)) answer();
  };
  stub.close = () => {
    stub.open();
    server.closeAllConnections?.();
    return new Promise((resolve) => server.close(resolve));
  };
  return stub;
}

function spawnDelivering(stub, args = [], options = {}) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PUSH_OUTBOX_')));
  return Outbox.spawn({
    binary: realBinary(),
    args: ['--memory', '--braze-endpoint', stub.url, '--braze-backoff-ms', '20', ...args],
    env: { ...env, BRAZE_API_KEY: 'test-key' },
    timeoutMs: 20_000,
    ...options,
  });
}

/** Waits for `predicate()`; the deadline only guards against a hang. */
async function until(predicate) {
  const deadline = Date.now() + 30_000;
  while (!(await predicate())) {
    assert.ok(Date.now() < deadline, 'condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function saveForUsers(ob, count) {
  for (let n = 0; n < count; n++) await ob.saveCustomEvent({ name: `e${n}`, user: { externalId: `u${n}` } });
}

describe('long calls', () => {
  test('a pass waiting on Braze does not hold later replies back', async () => {
    const stub = await brazeStub();
    const ob = await spawnDelivering(stub);
    try {
      await saveForUsers(ob, 3);
      let settled = false;
      const pass = ob.deliverPending().finally(() => (settled = true));
      await until(() => stub.inFlight >= 1);
      assert.equal((await ob.status()).pending.total, 3);
      await ob.saveCustomEvent({ name: 'late', user: { externalId: 'z' } });
      assert.equal(settled, false);
      stub.open();
      const result = await pass;
      assert.equal(result.delivered + result.remaining, 4);
    } finally {
      await ob.close();
      await stub.close();
    }
  });

  test('aborting the call sends $/cancelRequest: the pass stops, the request in flight is applied', async () => {
    const stub = await brazeStub();
    const ob = await spawnDelivering(stub, ['--braze-max-in-flight', '1', '--track-batch-limit', '1']);
    try {
      await saveForUsers(ob, 5);
      const controller = new AbortController();
      const pass = ob.deliverPending({}, { signal: controller.signal });
      await until(() => stub.inFlight >= 1);
      controller.abort();
      await rejectsWith(pass, AbortError);
      stub.open();
      await until(async () => (await ob.status()).delivery.inFlight === 0);
      assert.equal(stub.requests, 1);
      assert.equal((await ob.status()).pending.total, 4);
    } finally {
      await ob.close();
      await stub.close();
    }
  });

  test('onProgress gets begin, reports and end', async () => {
    const stub = await brazeStub({ gated: false, stallMs: 4 });
    const ob = await spawnDelivering(stub, ['--track-batch-limit', '1', '--braze-max-in-flight', '2']);
    try {
      await saveForUsers(ob, 40);
      const seen = [];
      const result = await ob.deliverPending({}, { onProgress: (value) => seen.push(value) });
      assert.equal(result.delivered, 40);
      const kinds = seen.map((v) => v.kind);
      assert.equal(kinds[0], 'begin');
      assert.equal(kinds.at(-1), 'end');
      assert.ok(kinds.slice(1, -1).every((k) => k === 'report'));
      assert.equal(seen.at(-1).message, '40/40 items');
    } finally {
      await ob.close();
      await stub.close();
    }
  });

  test('cancel notifications: an unknown id does nothing; the MCP form carries the reason', async () => {
    const stub = await brazeStub();
    const ob = await spawnDelivering(stub);
    try {
      await saveForUsers(ob, 1);
      const pass = ob.deliverPending();
      const passId = 2; // the client numbers its calls from 1: the save took 1
      await until(() => stub.inFlight >= 1);
      await ob.cancelRequest({ id: 999 });
      assert.equal((await ob.status()).pending.total, 1);
      await ob.cancelled({ requestId: passId, reason: 'user gave up' });
      const error = await rejectsWith(pass, RequestCancelled);
      assert.deepEqual(error.data, { reason: 'request_cancelled', detail: 'user gave up' });
      stub.open();
    } finally {
      await ob.close();
      await stub.close();
    }
  });

  test('an id-null parse error answers the call it belongs to, not an older long call', async () => {
    const stub = await brazeStub();
    const ob = await spawnDelivering(stub, ['--max-line-bytes', '2000'], { maxLineBytes: 0 });
    try {
      await saveForUsers(ob, 1);
      const pass = ob.deliverPending();
      await until(() => stub.inFlight >= 1);
      await rejectsWith(ob.saveCustomEvent({ name: 'big', properties: { pad: 'x'.repeat(5000) } }), ParseError);
      stub.open();
      assert.equal((await pass).delivered, 1);
    } finally {
      await ob.close();
      await stub.close();
    }
  });
});
