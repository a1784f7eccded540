import Synchronization

/// A one-value mailbox between a background queue and the request loop: the queue `put`s,
/// the loop `take`s (and so empties it).
package final class Mailbox<Value: Sendable>: Sendable {
  private let slot = Mutex<Value?>(nil)

  package init() {}

  package func put(_ value: Value) { slot.withLock { $0 = value } }

  package func take() -> Value? {
    slot.withLock { value in
      defer { value = nil }
      return value
    }
  }
}
