// Pipelining: many calls in flight at once, answers matched by id.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Outbox } from '../src/index.js';
import { nodeServer, spawnReal } from './helpers.js';

describe('concurrency', () => {
  test('1000 concurrent saves against the real server: unique ids and seqs, final pending 1000', async () => {
    const ob = await spawnReal();
    try {
      const results = await Promise.all(
        Array.from({ length: 1000 }, (_, i) =>
          ob.saveCustomEvent({ name: 'concurrent', properties: { i }, user: { externalId: `u${i % 7}` } }),
        ),
      );
      assert.equal(new Set(results.map((r) => r.id)).size, 1000, 'ids are unique');
      const seqs = results.map((r) => r.seq);
      assert.equal(new Set(seqs).size, 1000, 'seqs are unique');
      assert.deepEqual(
        [...seqs].sort((a, b) => a - b),
        Array.from({ length: 1000 }, (_, i) => i + 1),
      );
      assert.equal(Math.max(...results.map((r) => r.pending)), 1000);
      assert.equal(ob.pendingCount, 0);
      const status = await ob.status();
      assert.equal(status.pending.total, 1000);
      assert.equal(status.pending.customEvent, 1000);

      const { items, remaining } = await ob.flushPending({ max: 10_000 });
      assert.equal(items.length, 1000);
      assert.equal(remaining, 0);
      // Each answer went to its own call: the item with seq N carries the properties of the call that got seq N.
      const bySeq = new Map(results.map((r, i) => [r.seq, i]));
      for (const item of items) assert.equal(item.properties.i, bySeq.get(item.seq));
    } finally {
      assert.equal(await ob.close(), 0);
    }
  });

  test('answers in reverse order reach the right callers', async () => {
    const ob = await Outbox.spawn({ binary: nodeServer('reverse', 50) });
    try {
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => ob.call(`m${i}`, { i })));
      results.forEach((result, i) => assert.deepEqual(result, { echo: { id: i + 1, method: `m${i}`, params: { i } } }));
    } finally {
      await ob.close();
    }
  });

  test('request ids are small integers from a counter', async () => {
    const ob = await Outbox.spawn({ binary: nodeServer('ids', 5) });
    try {
      const results = await Promise.all(Array.from({ length: 5 }, () => ob.status()));
      for (const result of results) assert.deepEqual(result, { ids: [1, 2, 3, 4, 5] });
    } finally {
      await ob.close();
    }
  });
});
