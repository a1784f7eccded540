// The wire methods: their names, and the camelCase methods Outbox gets for them.

/** camelCase client method -> wire method name. The wire names live only here. */
export const METHODS = Object.freeze({
  parsePayload: 'parsePayload',
  saveCustomEvent: 'saveCustomEvent',
  saveCustomAttribute: 'saveCustomAttribute',
  saveUserAttribute: 'saveUserAttribute',
  flushPending: 'flushPending',
  ackFlush: 'ackFlush',
  releaseFlush: 'releaseFlush',
  status: 'status',
  deliverPending: 'deliverPending',
  listDeadLetters: 'listDeadLetters',
  requeueDeadLetters: 'requeueDeadLetters',
  dropDeadLetters: 'dropDeadLetters',
  importLegacy: 'importLegacy',
  discover: 'rpc.discover',
  cancelRequest: '$/cancelRequest',
  cancelled: 'notifications/cancelled',
});

/** The wire methods that are notifications: their camelCase methods send them and resolve once written. */
export const NOTIFICATIONS = Object.freeze(new Set(['$/cancelRequest', 'notifications/cancelled']));

/** Calls the id-null rule skips: long calls whose line is never refused (Protocol/README.md, "Errors with id null"). */
export const LONG_METHODS = Object.freeze(new Set(['deliverPending']));
/** The notification that cancels a long call, and the one that reports its progress. */
export const CANCEL_METHOD = '$/cancelRequest';
export const PROGRESS_METHOD = '$/progress';

/** The App Group keys of Braze's push guide that `importLegacy` reads. */
export const LEGACY_LISTS = Object.freeze(['pending_custom_events', 'pending_custom_attributes', 'pending_user_attributes']);

/**
 * The `importLegacy` params from an App Group's `UserDefaults` as `plutil -convert json` gives it:
 * the three `pending_*` keys that are present; every other key is left out.
 */
export function legacyLists(defaults) {
  const params = {};
  for (const key of LEGACY_LISTS) {
    if (defaults != null && Object.hasOwn(defaults, key)) params[key] = defaults[key];
  }
  return params;
}


/**
 * Gives `proto` one method per entry of METHODS, `name(params, options)`, that calls the wire
 * method with `params ?? {}` (or sends it, for NOTIFICATIONS). Defined like class methods (non-enumerable, writable, configurable).
 * Their documentation is in index.d.ts; e.g. `importLegacy` answers per-element errors in
 * `results` (never thrown), `discover` is rpc.discover, the server's OpenRPC document.
 */
export function defineWireMethods(proto) {
  for (const [name, wire] of Object.entries(METHODS)) {
    const notification = NOTIFICATIONS.has(wire);
    const { [name]: method } = {
      [name](params, options) {
        return notification ? this.notify(wire, params ?? {}) : this.call(wire, params ?? {}, options);
      },
    };
    Object.defineProperty(proto, name, { value: method, writable: true, configurable: true, enumerable: false });
  }
}
