// Process lifecycle: timeouts, aborts, server death, EPIPE, stderr, close().
// Behaviour the real server cannot be made to show on demand uses small fake servers.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  AbortError,
  ClosedError,
  Outbox,
  ServerExitedError,
  TimeoutError,
} from '../src/index.js';
import { clientDir, nodeServer, rejectsWith, shellServer, spawnReal, tempDir } from './helpers.js';

const NEVER_ANSWERS = 'exec cat >/dev/null';

describe('timeouts', () => {
  test('a call the server never answers rejects with TimeoutError', async () => {
    const ob = await Outbox.spawn({ binary: shellServer(NEVER_ANSWERS) });
    try {
      const started = Date.now();
      await rejectsWith(ob.status({}, { timeoutMs: 200 }), TimeoutError, (err) => {
        assert.equal(err.method, 'status');
        assert.equal(err.timeoutMs, 200);
      });
      assert.ok(Date.now() - started >= 190, 'rejected too early');
      assert.equal(ob.pendingCount, 0);
    } finally {
      assert.equal(await ob.close(), 0);
    }
  });

  test('spawn({timeoutMs}) is the default for every call', async () => {
    const ob = await Outbox.spawn({ binary: shellServer(NEVER_ANSWERS), timeoutMs: 150 });
    try {
      await Promise.all([
        rejectsWith(ob.saveCustomEvent({ name: 'a' }), TimeoutError),
        rejectsWith(ob.call('anything'), TimeoutError, (err) => assert.equal(err.timeoutMs, 150)),
      ]);
    } finally {
      await ob.close();
    }
  });

  test('timeoutMs: 0 disables the timeout', async () => {
    const ob = await Outbox.spawn({ binary: shellServer(NEVER_ANSWERS), timeoutMs: 50 });
    try {
      const controller = new AbortController();
      const call = ob.status({}, { timeoutMs: 0, signal: controller.signal });
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(ob.pendingCount, 1);
      controller.abort();
      await rejectsWith(call, AbortError);
    } finally {
      await ob.close();
    }
  });

  test('AbortSignal.timeout() rejects with TimeoutError', async () => {
    const ob = await Outbox.spawn({ binary: shellServer(NEVER_ANSWERS) });
    try {
      await rejectsWith(ob.status({}, { signal: AbortSignal.timeout(100) }), TimeoutError, (err) => {
        assert.equal(err.timeoutMs, null);
        assert.equal(err.cause?.name, 'TimeoutError');
      });
    } finally {
      await ob.close();
    }
  });
});

describe('AbortSignal', () => {
  test('aborting a pending call rejects it with AbortError carrying the reason', async () => {
    const ob = await Outbox.spawn({ binary: shellServer(NEVER_ANSWERS) });
    try {
      const controller = new AbortController();
      const call = ob.flushPending({}, { signal: controller.signal });
      setTimeout(() => controller.abort(new Error('user gave up')), 50);
      await rejectsWith(call, AbortError, (err) => {
        assert.equal(err.method, 'flushPending');
        assert.equal(err.cause.message, 'user gave up');
      });
      assert.equal(ob.pendingCount, 0);
    } finally {
      await ob.close();
    }
  });

  test('an already aborted signal rejects without sending anything', async () => {
    const ob = await Outbox.spawn({ binary: nodeServer('ids', 1) });
    try {
      const controller = new AbortController();
      controller.abort();
      await rejectsWith(ob.status({}, { signal: controller.signal }), AbortError);
      assert.equal(ob.pendingCount, 0);
      // The server saw only the next request, and it got id 1: nothing was written or consumed.
      assert.deepEqual(await ob.status(), { ids: [1] });
    } finally {
      await ob.close();
    }
  });

  test('a late answer to an aborted call is dropped and reported as unmatched', async () => {
    const ob = await Outbox.spawn({ binary: nodeServer('reverse', 2) });
    try {
      const unmatched = [];
      ob.on('unmatched', (message) => unmatched.push(message));
      const controller = new AbortController();
      const first = ob.call('first', { n: 1 }, { signal: controller.signal });
      controller.abort();
      await rejectsWith(first, AbortError);
      const second = await ob.call('second', { n: 2 });
      assert.deepEqual(second, { echo: { id: 2, method: 'second', params: { n: 2 } } });
      if (unmatched.length === 0) await once(ob, 'unmatched');
      assert.equal(unmatched.length, 1);
      assert.equal(unmatched[0].id, 1);
    } finally {
      await ob.close();
    }
  });
});

describe('server death', () => {
  test('kill -9 with calls pending rejects every call with ServerExitedError', async () => {
    const ob = await spawnReal();
    await ob.status(); // the server is up and answering
    process.kill(ob.pid, 'SIGSTOP'); // keep the calls below unanswered
    const calls = [];
    for (let i = 0; i < 20; i++) calls.push(ob.saveCustomEvent({ name: 'doomed', properties: { i } }));
    calls.push(ob.status());
    assert.equal(ob.pendingCount, 21);
    process.kill(ob.pid, 'SIGKILL');
    const results = await Promise.allSettled(calls);
    for (const result of results) {
      assert.equal(result.status, 'rejected');
      assert.ok(result.reason instanceof ServerExitedError, String(result.reason));
      assert.equal(result.reason.signal, 'SIGKILL');
      assert.equal(result.reason.exitCode, null);
      assert.match(result.reason.message, /killed by SIGKILL/);
    }
    assert.equal(results[0].reason.method, 'saveCustomEvent');
    assert.equal(results[20].reason.method, 'status');
    assert.equal(ob.pendingCount, 0);
    assert.deepEqual(await ob.exited, { exitCode: null, signal: 'SIGKILL' });
    await rejectsWith(ob.status(), ServerExitedError, (err) => assert.equal(err.signal, 'SIGKILL'));
    assert.equal(await ob.close(), null);
  });

  test('an exit code and the stderr tail reach ServerExitedError', async () => {
    const ob = await Outbox.spawn({
      binary: shellServer('read line\necho "warming up" >&2\necho "fatal: disk on fire" >&2\nexit 7'),
    });
    await rejectsWith(ob.status(), ServerExitedError, (err) => {
      assert.equal(err.exitCode, 7);
      assert.equal(err.signal, null);
      assert.equal(err.stderr, 'warming up\nfatal: disk on fire\n');
      assert.match(err.message, /exited with code 7: fatal: disk on fire/);
    });
    assert.equal(await ob.close(), 7);
  });

  test('a binary that cannot be started makes spawn() reject', async () => {
    await assert.rejects(Outbox.spawn({ binary: path.join(tempDir(), 'no-such-binary') }), { code: 'ENOENT' });
  });
});

describe('EPIPE', () => {
  test('a server that exits at once: calls reject, the parent survives', async () => {
    const ob = await Outbox.spawn({ binary: shellServer('exit 0') });
    const calls = [];
    for (let i = 0; i < 50; i++) calls.push(ob.saveCustomEvent({ name: 'e', properties: { pad: 'x'.repeat(4096) } }));
    calls.push(ob.notify('status', {}));
    for (const result of await Promise.allSettled(calls)) {
      assert.equal(result.status, 'rejected');
      assert.ok(result.reason instanceof ServerExitedError, String(result.reason));
      assert.equal(result.reason.exitCode, 0);
    }
    await ob.exited;
    await rejectsWith(ob.status(), ServerExitedError, (err) => assert.equal(err.exitCode, 0));
    await rejectsWith(ob.notify('status', {}), ServerExitedError);
    assert.equal(await ob.close(), 0);
  });

  test('a live server with a closed stdin: EPIPE is caught and calls reject', async () => {
    const ob = await Outbox.spawn({ binary: shellServer('exec 0<&-\necho ready >&2\nexec sleep 30') });
    const stdinErrors = [];
    ob.on('stdinError', (err) => stdinErrors.push(err));
    while (!ob.stderrTail.includes('ready')) await once(ob, 'stderr');
    const calls = [ob.status(), ob.saveCustomEvent({ name: 'x' }), ob.notify('status', {})];
    for (const result of await Promise.allSettled(calls)) {
      assert.equal(result.status, 'rejected');
      assert.ok(result.reason instanceof ServerExitedError, String(result.reason));
      assert.equal(result.reason.cause?.code, 'EPIPE');
    }
    assert.equal(stdinErrors[0]?.code, 'EPIPE');
    assert.ok(ob.isExited, 'the client makes sure the half-dead server is gone');
  });

  test('a separate Node process survives EPIPE (no unhandled error event)', async () => {
    const exitNow = shellServer('exit 0');
    const closedStdin = shellServer('exec 0<&-\nsleep 0.2\nexec sleep 30');
    const script = `
      import { Outbox } from ${JSON.stringify(path.join(clientDir, 'src', 'index.js'))};
      for (const binary of ${JSON.stringify([exitNow, closedStdin])}) {
        const ob = await Outbox.spawn({ binary });
        await new Promise((resolve) => setTimeout(resolve, 400));
        const results = await Promise.allSettled(
          Array.from({ length: 20 }, () => ob.saveCustomEvent({ name: 'e', properties: { pad: 'x'.repeat(70000) } })),
        );
        if (!results.every((r) => r.status === 'rejected' && r.reason.name === 'ServerExitedError')) process.exit(3);
        await ob.close();
      }
      console.log('survived');
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const [code] = await once(child, 'exit');
    assert.equal(code, 0, `child failed with ${code}: ${stderr}`);
    assert.equal(stdout.trim(), 'survived');
  });
});

describe('stderr', () => {
  test('stderr is drained, so a chatty server never blocks; ~64 KiB tail is kept', async () => {
    const ob = await Outbox.spawn({ binary: nodeServer('stderr-flood') });
    try {
      // The server writes 1 MiB to stderr before it answers: without draining it would block.
      const result = await ob.call('ping', {}, { timeoutMs: 10_000 });
      assert.deepEqual(result, { echo: { id: 1, method: 'ping', params: {} } });
    } finally {
      assert.equal(await ob.close(), 0);
    }
    // After exit every stderr byte has been read.
    assert.ok(ob.stderrTail.length <= 64 * 1024);
    assert.ok(ob.stderrTail.length > 60 * 1024);
    assert.ok(ob.stderrTail.endsWith('END-OF-FLOOD\n'));
  });

  test('ServerExitedError.stderr holds only the tail', async () => {
    const ob = await Outbox.spawn({
      binary: shellServer("head -c 300000 /dev/zero | tr '\\0' y >&2\necho >&2\necho LAST-LINE >&2\nexit 5"),
    });
    await rejectsWith(ob.status(), ServerExitedError, (err) => {
      assert.equal(err.exitCode, 5);
      assert.ok(err.stderr.length <= 64 * 1024);
      assert.ok(err.stderr.endsWith('\nLAST-LINE\n'));
      assert.match(err.message, /LAST-LINE$/);
    });
  });
});

describe('close()', () => {
  test('graceful close of the real server: exit code 0', async () => {
    const ob = await spawnReal();
    await ob.saveCustomEvent({ name: 'before_close' });
    const closing = ob.close();
    assert.equal(ob.close(), closing, 'close() is idempotent');
    assert.equal(await closing, 0);
    assert.equal(ob.exitCode, 0);
    assert.equal(ob.signalCode, null);
    assert.ok(ob.isExited);
    await rejectsWith(ob.status(), ClosedError);
  });

  test('calls in flight when close() starts are still answered', async () => {
    const ob = await spawnReal();
    const saves = [];
    for (let i = 0; i < 100; i++) saves.push(ob.saveCustomEvent({ name: 'inflight', properties: { i } }));
    const closing = ob.close();
    await rejectsWith(ob.status(), ClosedError);
    const results = await Promise.all(saves);
    assert.deepEqual(
      results.map((r) => r.seq),
      Array.from({ length: 100 }, (_, i) => i + 1),
    );
    assert.equal(await closing, 0);
  });

  test('a server that ignores EOF gets SIGTERM', async () => {
    const ob = await Outbox.spawn({ binary: shellServer('exec sleep 60') });
    const started = Date.now();
    assert.equal(await ob.close({ graceMs: 200, termMs: 5000 }), null);
    assert.equal(ob.signalCode, 'SIGTERM');
    assert.ok(Date.now() - started < 4000);
  });

  test('a server that ignores SIGTERM gets SIGKILL', async () => {
    const ob = await Outbox.spawn({ binary: shellServer("trap '' TERM\nexec sleep 60") });
    assert.equal(await ob.close({ graceMs: 200, termMs: 200 }), null);
    assert.equal(ob.signalCode, 'SIGKILL');
  });

  test('Symbol.asyncDispose closes the client', async () => {
    const ob = await Outbox.spawn({ binary: shellServer(NEVER_ANSWERS) });
    assert.equal(typeof ob[Symbol.asyncDispose], 'function');
    await ob[Symbol.asyncDispose]();
    assert.equal(ob.exitCode, 0);
  });
});
