import Synchronization

/// A histogram of durations in seconds, for `/metrics`: cumulative bucket counts, a count and a sum.
///
/// Observed from whichever thread did the work (the journal's background fsyncs, the snapshot
/// queue), read when a metrics snapshot is published; one short lock each. Never on a request's path
/// unless `--fsync always` makes the fsync itself part of it.
package final class DurationHistogram: Sendable {
  /// Upper bounds in seconds (the `+Inf` bucket is implied).
  package static let bounds: [Double] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
  ]

  package struct Value: Sendable, Equatable {
    /// Observations at or below each of `bounds` (not cumulative).
    package var buckets = [UInt64](repeating: 0, count: DurationHistogram.bounds.count)
    package var count: UInt64 = 0
    package var sum = 0.0
    package init() {}
  }

  /// Every fsync of a journal segment or of the store directory for the journal.
  package static let journalFsync = DurationHistogram()
  /// Every snapshot (checkpoint and segment rewrites), from start to its last fsync.
  package static let snapshot = DurationHistogram()

  private let state = Mutex(Value())

  package init() {}

  package func observe(seconds: Double) {
    let seconds = seconds.isFinite ? max(0, seconds) : 0
    let index = Self.bounds.firstIndex { seconds <= $0 }
    state.withLock { value in
      if let index { value.buckets[index] &+= 1 }
      value.count &+= 1
      value.sum += seconds
    }
  }

  /// Runs `body` and records how long it took.
  package func time<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
    let start = Clock.monotonicSeconds()
    defer { observe(seconds: Clock.monotonicSeconds() - start) }
    return try body()
  }

  package var value: Value { state.withLock { $0 } }
}
