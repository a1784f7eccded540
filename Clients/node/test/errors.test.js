// Error mapping: wire error objects -> RpcError subclasses, and client-side checks.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ErrorCodes,
  InternalError,
  InvalidParams,
  InvalidRequest,
  ItemTooLarge,
  LeaseNotFound,
  MethodNotFound,
  Outbox,
  OutboxError,
  ParseError,
  RpcError,
  ServerExitedError,
  StorageUnavailable,
  StoreFull,
  StoreLocked,
  TimeoutError,
  UnsupportedStoreVersion,
  StartupFailed,
  DeliveryNotConfigured,
  RequestCancelled,
} from '../src/index.js';
import { nodeServer, realBinary, rejectsWith, spawnReal, tempDir } from './helpers.js';

const CLASSES = [
  [-32700, ParseError],
  [-32600, InvalidRequest],
  [-32601, MethodNotFound],
  [-32602, InvalidParams],
  [-32603, InternalError],
  [-32800, RequestCancelled],
  [-32001, StoreFull],
  [-32002, ItemTooLarge],
  [-32003, StorageUnavailable],
  [-32004, LeaseNotFound],
  [-32005, StoreLocked],
  [-32006, UnsupportedStoreVersion],
  [-32007, StartupFailed],
  [-32010, DeliveryNotConfigured],
];

describe('error classes (scripted server)', () => {
  test('every documented code maps to its class, with code, message and data', async () => {
    const ob = await Outbox.spawn({ binary: nodeServer('errors') });
    try {
      for (const [code, Class] of CLASSES) {
        const data = { reason: `r${code}`, errors: [{ path: 'p', code: 'c', message: 'm' }] };
        await rejectsWith(ob.call('fail', { code, message: `message ${code}`, data }), Class, (err) => {
          assert.ok(err instanceof RpcError);
          assert.ok(err instanceof OutboxError);
          assert.ok(err instanceof Error);
          assert.equal(err.name, Class.name);
          assert.equal(err.code, code);
          assert.equal(err.message, `message ${code}`);
          assert.deepEqual(err.data, data);
          assert.equal(err.method, 'fail');
          assert.deepEqual(err.toJSON(), { code, message: `message ${code}`, data });
        });
      }
    } finally {
      await ob.close();
    }
  });

  test('ErrorCodes matches the classes', () => {
    for (const [code, Class] of CLASSES) assert.equal(ErrorCodes[Class.name], code);
    assert.equal(Object.keys(ErrorCodes).length, CLASSES.length);
  });

  test('an unknown code is a plain RpcError; data may be absent', async () => {
    const ob = await Outbox.spawn({ binary: nodeServer('errors') });
    try {
      await rejectsWith(ob.call('fail', { code: 42, message: 'custom' }), RpcError, (err) => {
        assert.equal(err.constructor, RpcError);
        assert.equal(err.code, 42);
        assert.equal(err.data, undefined);
        assert.deepEqual(err.toJSON(), { code: 42, message: 'custom' });
      });
      await rejectsWith(ob.call('fail', { code: -32050, message: 'server range' }), RpcError, (err) =>
        assert.equal(err.constructor, RpcError),
      );
    } finally {
      await ob.close();
    }
  });

  test('InvalidParams.errors is data.errors, or [] when missing', async () => {
    const ob = await Outbox.spawn({ binary: nodeServer('errors') });
    try {
      const errors = [
        { path: 'properties.a', code: 'string_too_long', message: 'x' },
        { path: 'bogus', code: 'unknown_param', message: 'y' },
      ];
      await rejectsWith(ob.call('fail', { code: -32602, message: 'Invalid params', data: { errors } }), InvalidParams, (err) =>
        assert.deepEqual(err.errors, errors),
      );
      await rejectsWith(ob.call('fail', { code: -32602, message: 'Invalid params' }), InvalidParams, (err) =>
        assert.deepEqual(err.errors, []),
      );
    } finally {
      await ob.close();
    }
  });

  test('an id-null -32700 goes to the oldest pending call (Protocol/README.md)', async () => {
    const ob = await Outbox.spawn({ binary: nodeServer('id-null') });
    try {
      await rejectsWith(ob.status(), ParseError, (err) => assert.equal(err.data.reason, 'line_too_long'));
      const both = await Promise.allSettled([ob.status(), ob.status()]);
      for (const result of both) assert.ok(result.reason instanceof ParseError);
    } finally {
      await ob.close();
    }
  });

  test('with three calls pipelined, the id-null error rejects the first and the others resolve', async () => {
    const ob = await Outbox.spawn({ binary: nodeServer('id-null-first', '3') });
    try {
      const [first, second, third] = await Promise.allSettled([ob.call('a'), ob.call('b'), ob.call('c')]);
      assert.ok(first.reason instanceof ParseError);
      assert.equal(second.value.echo.method, 'b');
      assert.equal(third.value.echo.method, 'c');
    } finally {
      await ob.close();
    }
  });
});

describe('client-side checks', () => {
  test('params must be an object or an array', async () => {
    const ob = await Outbox.spawn({ binary: nodeServer('echo') });
    try {
      await assert.rejects(ob.call('status', 'nope'), TypeError);
      await assert.rejects(ob.call('status', null), TypeError);
      await assert.rejects(ob.call(42), TypeError);
      await assert.rejects(ob.saveCustomEvent({ name: 'x', properties: { big: 1n } }), TypeError);
      const cyclic = {};
      cyclic.self = cyclic;
      await assert.rejects(ob.saveCustomEvent({ name: 'x', properties: cyclic }), TypeError);
      assert.equal(ob.pendingCount, 0);
      assert.deepEqual(await ob.call('positional', [1, 2]), { echo: { id: 1, method: 'positional', params: [1, 2] } });
    } finally {
      await ob.close();
    }
  });

  test('a lone surrogate is refused locally (the server could not attribute its parse error)', async () => {
    const ob = await Outbox.spawn({ binary: nodeServer('echo') });
    try {
      await assert.rejects(ob.saveCustomEvent({ name: 'x', properties: { s: 'a\ud800b' } }), /lone UTF-16 surrogate/);
      await assert.rejects(ob.saveCustomEvent({ name: 'x', properties: { ['\udc00']: 1 } }), /lone UTF-16 surrogate/);
      // A real pair and an escaped-looking literal are fine.
      const ok = await ob.call('echo', { s: '\u{1F600}', t: '\\ud800' });
      assert.deepEqual(ok.echo.params, { s: '\u{1F600}', t: '\\ud800' });
    } finally {
      await ob.close();
    }
  });

  test('a line over --max-line-bytes is refused locally with ParseError', async () => {
    const ob = await Outbox.spawn({ binary: nodeServer('echo'), args: ['--max-line-bytes', '200'] });
    try {
      await rejectsWith(ob.saveCustomEvent({ name: 'x'.repeat(300) }), ParseError, (err) => {
        assert.equal(err.code, -32700);
        assert.equal(err.data.reason, 'line_too_long');
        assert.equal(err.data.limit, 200);
      });
      assert.equal(ob.pendingCount, 0);
      assert.ok(await ob.saveCustomEvent({ name: 'short' }));
    } finally {
      await ob.close();
    }
  });
});

describe('error codes from the real server', () => {
  test('MethodNotFound (-32601), including unknown rpc.* methods', async () => {
    const ob = await spawnReal();
    try {
      await rejectsWith(ob.call('noSuchMethod', {}), MethodNotFound, (err) => {
        assert.equal(err.code, -32601);
        assert.equal(err.method, 'noSuchMethod');
      });
      await rejectsWith(ob.call('rpc.nope', {}), MethodNotFound);
      await rejectsWith(ob.call('SaveCustomEvent', { name: 'x' }), MethodNotFound);
    } finally {
      assert.equal(await ob.close(), 0);
    }
  });

  test('InvalidParams (-32602): missing, unknown, positional, all problems at once', async () => {
    const ob = await spawnReal();
    try {
      await rejectsWith(ob.saveCustomEvent({}), InvalidParams, (err) => {
        assert.equal(err.code, -32602);
        assert.deepEqual(
          err.errors.map((e) => [e.path, e.code]),
          [['name', 'missing']],
        );
        assert.equal(typeof err.errors[0].message, 'string');
      });
      await rejectsWith(ob.saveCustomEvent({ name: 'x', bogus: 1, properties: { s: 'a'.repeat(300) } }), InvalidParams, (err) => {
        const found = err.errors.map((e) => `${e.path}:${e.code}`).sort();
        assert.deepEqual(found, ['bogus:unknown_param', 'properties.s:string_too_long']);
      });
      await rejectsWith(ob.call('status', []), InvalidParams);
      await rejectsWith(ob.saveUserAttribute({ field: 'email', value: 1 }), InvalidParams, (err) =>
        assert.deepEqual(err.errors.map((e) => [e.path, e.code]), [['value', 'wrong_type']]),
      );
      await rejectsWith(ob.saveCustomEvent({ name: 'x', user: { externalId: 'a', email: 'b@c.de' } }), InvalidParams);
      await rejectsWith(ob.flushPending({ max: 0 }), InvalidParams);
      await rejectsWith(ob.flushPending({ format: 'csv' }), InvalidParams);
      assert.equal((await ob.status()).pending.total, 0, 'nothing was stored by the rejected calls');
    } finally {
      assert.equal(await ob.close(), 0);
    }
  });

  test('StoreFull (-32001) with --max-pending', async () => {
    const ob = await spawnReal({ args: ['--max-pending', '2'] });
    try {
      await ob.saveCustomEvent({ name: 'a' });
      await ob.saveCustomEvent({ name: 'b' });
      await rejectsWith(ob.saveCustomEvent({ name: 'c' }), StoreFull, (err) => assert.equal(err.code, -32001));
      assert.equal((await ob.status()).pending.total, 2);
    } finally {
      assert.equal(await ob.close(), 0);
    }
  });

  test('ItemTooLarge (-32002) with --max-item-bytes', async () => {
    const ob = await spawnReal({ args: ['--max-item-bytes', '200'] });
    try {
      const properties = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, 'v'.repeat(100)]));
      await rejectsWith(ob.saveCustomEvent({ name: 'big', properties }), ItemTooLarge, (err) =>
        assert.equal(err.code, -32002),
      );
      assert.ok(await ob.saveCustomEvent({ name: 'small' }));
    } finally {
      assert.equal(await ob.close(), 0);
    }
  });

  test('ParseError (-32700, id null) for a line over --max-line-bytes; the server carries on', async () => {
    // maxLineBytes: 0 turns the client-side check off so that the server sees the line.
    const ob = await spawnReal({ args: ['--max-line-bytes', '1000'], maxLineBytes: 0 });
    try {
      await rejectsWith(ob.saveCustomEvent({ name: 'x', properties: { pad: 'p'.repeat(200), more: 'q'.repeat(900) } }), ParseError, (err) => {
        assert.equal(err.code, -32700);
        assert.equal(err.data.reason, 'line_too_long');
        assert.equal(err.data.limit, 1000);
      });
      assert.equal((await ob.status()).pending.total, 0);
    } finally {
      assert.equal(await ob.close(), 0);
    }
  });

  test('a locked store: exit code 3 and StoreLocked (-32005) on ServerExitedError.serverError', async () => {
    const store = tempDir();
    const first = await Outbox.spawn({ binary: realBinary(), store });
    try {
      await first.status();
      const second = await Outbox.spawn({ binary: realBinary(), store });
      await second.exited;
      await rejectsWith(second.status(), ServerExitedError, (err) => {
        assert.equal(err.exitCode, 3);
        assert.ok(err.serverError instanceof StoreLocked, `serverError: ${err.serverError}`);
        assert.match(err.stderr, /\S/);
      });
    } finally {
      assert.equal(await first.close(), 0);
    }
  });

  test('an unknown flag: exit code 2 and one stderr line', async () => {
    const ob = await Outbox.spawn({ binary: realBinary(), args: ['--no-such-flag'] });
    const { exitCode } = await ob.exited;
    assert.equal(exitCode, 2);
    assert.equal(ob.stderrTail.trim().split('\n').length, 1, ob.stderrTail);
    await rejectsWith(ob.status(), ServerExitedError, (err) => assert.equal(err.exitCode, 2));
  });
});
