// push-outbox Node client: spawns the push-outbox binary and talks
// line-delimited JSON-RPC 2.0 to it over stdin/stdout.
//
//   const ob = await Outbox.spawn({ store: './outbox' });
//   try { await ob.saveCustomEvent({ name: 'push_opened' }); } finally { await ob.close(); }
//
// Layout (dependencies point down): outbox.js (the process and the calls: Outbox) -> process.js
// (spawning), calls.js (request/response correlation), methods.js (wire method names and the
// camelCase methods), wire.js (line encoding and decoding) -> discovery.js (finding the binary)
// -> errors.js.

export * from './errors.js';
export { METHODS, LEGACY_LISTS, legacyLists } from './methods.js';
export { BINARY_NAME, BUNDLED_BINARY, findBinary } from './discovery.js';
export { DEFAULT_MAX_LINE_BYTES } from './wire.js';
export { DEFAULT_TIMEOUT_MS, Outbox } from './outbox.js';
