import Dispatch
package import OutboxSupport
import Synchronization

/// The last published `MetricsSnapshot`: the loop swaps a new one in (`publish`), the HTTP thread
/// takes it out (`latest`). One short lock on each side and nowhere else.
package final class MetricsBoard: Sendable {
  private let slot = Mutex(MetricsSnapshot())
  package let clock: Clock

  package init(clock: Clock) { self.clock = clock }

  func publish(_ snapshot: MetricsSnapshot) {
    slot.withLock { $0 = snapshot }
  }

  package var latest: MetricsSnapshot { slot.withLock { $0 } }

  package func text(_ format: MetricsFormat) -> String {
    MetricsText.render(latest, format: format, nowMs: clock.now())
  }
}

/// `--metrics-file`: the Prometheus text written to a temp file in the same directory, then renamed
/// over the path, so a reader (node_exporter's textfile collector) sees the old file or the new one.
/// The temp file has a fresh random name and is created with `O_EXCL | O_NOFOLLOW`
/// (`FileIO.createTemporary`): nothing planted beside the path is opened.
enum MetricsFile {
  /// Writes `text` to `path` atomically; false (and nothing at `path` changed) when it could not.
  @discardableResult
  package static func write(_ text: String, to path: String) -> Bool {
    guard let (fd, temp) = try? FileIO.createTemporary(beside: path, mode: 0o644) else { return false }
    let ok = (try? FileIO.writeAll(fd, Array(text.utf8), path: temp)) != nil
    close(fd)
    guard ok, rename(temp, path) == 0 else {
      unlink(temp)
      return false
    }
    return true
  }
}

/// The metrics file's writes, off the request loop: the loop hands over the newest text (`submit`)
/// and a queue of its own writes it. A write that blocks (a hung file system) holds that queue, never
/// the loop; a text handed over meanwhile replaces the one still waiting, so at most one waits.
final class MetricsFileWriter: Sendable {
  private struct State {
    var waiting: String? = nil
    var running = false
    var failures = 0
  }

  let path: String
  private let state = Mutex(State())
  private let queue = DispatchQueue(label: "push-outbox.metrics-file")

  init(path: String) { self.path = path }

  /// Queues `text` to be written; true when the writes since the last call all succeeded.
  func submit(_ text: String) -> Bool {
    let (start, failures) = state.withLock { s in
      defer { (s.waiting, s.running, s.failures) = (text, true, 0) }
      return (!s.running, s.failures)
    }
    if start { queue.async { self.run() } }
    return failures == 0
  }

  /// Waits at most `seconds` for the waiting text to be written (before exit); false if it was not.
  func drain(seconds: Double) -> Bool {
    let deadline = Clock.monotonicSeconds() + seconds
    while state.withLock({ $0.running }) {
      guard Clock.monotonicSeconds() < deadline else { return false }
      usleep(2_000)
    }
    return true
  }

  private func run() {
    while let text = next() {
      if !MetricsFile.write(text, to: path) { state.withLock { $0.failures += 1 } }
    }
  }

  /// The text to write next, or nil when none waits (and the queue is idle again).
  private func next() -> String? {
    state.withLock { s in
      defer { s.waiting = nil }
      if s.waiting == nil { s.running = false }
      return s.waiting
    }
  }
}
