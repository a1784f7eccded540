// stdout framing: split on "\n" bytes only, whatever the chunking.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { Outbox } from '../src/index.js';
import { nodeServer } from './helpers.js';

describe('framing', () => {
  test('U+2028/U+2029/U+0085/CR inside strings and replies split across chunks and UTF-8 sequences', async () => {
    const ob = await Outbox.spawn({ binary: nodeServer('chunked') });
    try {
      const unmatched = [];
      ob.on('unmatched', (message) => unmatched.push(message));
      const params = { echo: '\u2028\u2029\u{1F680}' };
      const result = await ob.call('tricky', params);
      assert.deepEqual(result, { text: 'a\u2028b\u2029c\u0085d\r\u00e9\u{1F600}\u6f22', params });
      const second = await ob.call('tricky', {});
      assert.equal(second.text.length, 12);
      while (unmatched.length < 2) await once(ob, 'unmatched');
      assert.deepEqual(unmatched.map((m) => m.id), [424242, 424242]);
    } finally {
      await ob.close();
    }
  });

  test('a non-JSON line is reported as a protocol error and does not break the connection', async () => {
    const ob = await Outbox.spawn({ binary: nodeServer('garbage') });
    try {
      const problems = [];
      const unmatched = [];
      ob.on('protocolError', (problem) => problems.push(problem));
      ob.on('unmatched', (message) => unmatched.push(message));
      assert.deepEqual(await ob.call('ping', { n: 1 }), { echo: { id: 1, method: 'ping', params: { n: 1 } } });
      assert.equal(problems.length, 1);
      assert.equal(problems[0].line, 'this is not json');
      assert.deepEqual(unmatched, [{ jsonrpc: '2.0', id: 999999, result: 'nobody asked' }]);
    } finally {
      await ob.close();
    }
  });
});
