package import OutboxJSON

/// Work a serving process does beside its requests for as long as it runs, on a thread of its own
/// that the loop never waits for (`--relay`: publishing to NATS). The loop thread keeps the store:
/// it calls `tick` between requests, where the work hands the store's part over (a lease before a
/// publish, the settling after its acks), and `finish` once before exit.
package protocol BackgroundWork: AnyObject {
  /// Hands work over in both directions without blocking. `busy`: requests are waiting.
  func tick(service: Service, busy: Bool)
  /// How long the loop may wait for input before `tick` has something to do (-1: until input).
  func pollTimeoutMs() -> Int32
  /// Before exit: waits at most a short bound for the thread, and leaves whatever it has not
  /// finished pending in the store (its lease released).
  func finish(service: Service)
  /// Its part of `status`.
  func statusJSON(nowMs: Int64) -> JSONValue
}
