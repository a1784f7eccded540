// push-outbox/testing: a Braze fake (`push-outbox fake-braze`, from the same binary) and an outbox on
// a temporary store that delivers to it, for any test runner. Pass the test's context as `t` to
// have both stopped when the test ends (node:test's `t.after`, vitest's `onTestFinished`), or call
// `close()` yourself (jest: in `afterEach`).
//
//   const braze = await startFakeBraze({ t });
//   const outbox = await startOutbox({ t, braze });
//   await outbox.saveCustomEvent({ name: 'push_opened', user: { externalId: 'u1' } });
//   await outbox.waitDelivered();
//   assert.deepEqual((await braze.events({ user: 'u1' })).map((e) => e.name), ['push_opened']);

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { findBinary } from './discovery.js';
import { Outbox } from './outbox.js';

export const TEST_API_KEY = 'push-outbox-test-key';

/** Runs `close` when the test behind `t` ends, when `t` offers a hook. */
function onEnd(t, close) {
  if (typeof t?.after === 'function') t.after(close);
  else if (typeof t?.onTestFinished === 'function') t.onTestFinished(close);
}

function matches(object, user) {
  if (user === undefined) return true;
  if (typeof user === 'string') return object.external_id === user;
  return Object.entries(user).every(([key, value]) => JSON.stringify(object[key]) === JSON.stringify(value));
}

export class FakeBraze {
  /** @param {import('node:child_process').ChildProcess} child */
  constructor(child, port, apiKey) {
    this.child = child;
    this.port = port;
    this.apiKey = apiKey;
    this.url = `http://127.0.0.1:${port}`;
    this.exited = new Promise((resolve) => child.once('exit', resolve));
  }

  async #call(method, route, body) {
    const answer = await fetch(this.url + route, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await answer.text();
    if (!answer.ok) throw new Error(`fake-braze ${method} ${route}: ${answer.status} ${text}`);
    return JSON.parse(text);
  }

  /** Every request, oldest first: method, path, headers (key masked), body, status, answer. */
  requests() {
    return this.#call('GET', '/_fake/requests');
  }

  /** The objects of `array` the fake accepted (a 2xx, not named in `errors`), in arrival order. */
  async objects(array, { user } = {}) {
    const found = [];
    for (const record of await this.requests()) {
      if (!(record.status >= 200 && record.status < 300) || typeof record.body !== 'object') continue;
      const refused = new Set((record.answer?.errors ?? []).filter((e) => e.input_array === array).map((e) => e.index));
      (record.body[array] ?? []).forEach((object, index) => {
        if (!refused.has(index) && matches(object, user)) found.push(object);
      });
    }
    return found;
  }

  events(options) {
    return this.objects('events', options);
  }

  attributes(options) {
    return this.objects('attributes', options);
  }

  purchases(options) {
    return this.objects('purchases', options);
  }

  stats() {
    return this.#call('GET', '/_fake/stats');
  }

  /** The next `times` requests get `status`, or a dropped connection, or per-object `errors`. */
  async failNext({ status = 500, times = 1, retryAfter, headers, delayMs, drop, errors, body } = {}) {
    const step = { times };
    if (errors === undefined && !drop) step.status = status;
    if (retryAfter !== undefined) step.retryAfter = retryAfter;
    if (headers !== undefined) step.headers = headers;
    if (delayMs) step.delayMs = delayMs;
    if (drop) step.drop = true;
    if (errors !== undefined) step.errors = errors;
    if (body !== undefined) step.body = body;
    await this.script({ steps: [step], append: true });
  }

  /** `POST /_fake/script`: `{steps, append, rateLimit, delayMs}`. */
  async script(change) {
    await this.#call('POST', '/_fake/script', change);
  }

  async reset() {
    await this.#call('POST', '/_fake/reset');
  }

  async close() {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    await this.exited;
  }
}

/** Starts `push-outbox fake-braze` on a free loopback port. */
export async function startFakeBraze({ t, apiKey = TEST_API_KEY, args = [], binary } = {}) {
  const argv = ['fake-braze', '--listen', '127.0.0.1:0', '--stop-on-stdin-eof', '--api-key', apiKey, ...args];
  const child = spawn(findBinary({ binary }), argv, { stdio: ['pipe', 'pipe', 'ignore'] });
  const lines = readline.createInterface({ input: child.stdout });
  const port = await new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`push-outbox fake-braze exited (${code}) before listening`)));
    lines.once('line', (line) => resolve(Number(line)));
  });
  lines.close();
  child.stdout.resume();
  const fake = new FakeBraze(child, port, apiKey);
  onEnd(t, () => fake.close());
  return fake;
}

/** Starts push-outbox on a temporary store; with `braze`, it delivers there. */
export async function startOutbox({ t, braze, fixedClock, idSeed, args = [], binary, store } = {}) {
  const dir = store ?? fs.mkdtempSync(path.join(os.tmpdir(), 'push-outbox-test-'));
  const flags = [];
  if (fixedClock !== undefined) flags.push('--fixed-clock', fixedClock);
  if (idSeed !== undefined) flags.push('--id-seed', String(idSeed));
  const env = { ...process.env };
  if (braze) {
    flags.push('--deliver', '--braze-endpoint', braze.url, '--drain-timeout', '0', '--braze-backoff-ms', '100');
    env.BRAZE_API_KEY = braze.apiKey;
  }
  const outbox = await Outbox.spawn({ binary, store: path.join(dir, 'store'), args: [...flags, ...args], env });
  const close = outbox.close.bind(outbox);
  let closed;
  const extras = {
    store: dir,
    braze,
    /** Resolves once nothing is pending; rejects saying what is pending and why. */
    async waitDelivered({ timeoutMs = 10_000 } = {}) {
      if (!braze) throw new Error('this outbox delivers nowhere: start it with { braze: await startFakeBraze() }');
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const status = await outbox.status();
        if (status.pending.total === 0) return;
        if (Date.now() >= deadline) throw new Error(await why(status, timeoutMs));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    close(options) {
      closed ??= close(options).finally(() => {
        if (store === undefined) fs.rmSync(dir, { recursive: true, force: true });
      });
      return closed;
    },
  };
  async function why(status, timeoutMs) {
    const delivery = status.delivery ?? {};
    const lines = [`${status.pending.total} item(s) still pending after ${timeoutMs} ms: ${JSON.stringify(status.pending)}`];
    for (const key of ['configError', 'lastError', 'retrying', 'inFlight', 'deadLettered']) {
      if (delivery[key]) lines.push(`  delivery.${key}: ${JSON.stringify(delivery[key])}`);
    }
    const answers = (await braze.requests()).slice(-10).map((r) => String(r.status));
    lines.push(`  fake Braze's last answers: ${answers.join(', ') || 'no request reached it'}`);
    return lines.join('\n');
  }
  const testOutbox = Object.assign(outbox, extras);
  onEnd(t, () => testOutbox.close());
  return testOutbox;
}
