package import OutboxSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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
enum MetricsFile {
  /// Writes `text` to `path` atomically; false (and nothing at `path` changed) when it could not.
  @discardableResult
  package static func write(_ text: String, to path: String) -> Bool {
    let temp = path + ".tmp." + String(getpid())
    let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
    guard fd >= 0 else { return false }
    let ok = (try? FileIO.writeAll(fd, Array(text.utf8), path: temp)) != nil
    close(fd)
    guard ok, rename(temp, path) == 0 else {
      unlink(temp)
      return false
    }
    return true
  }
}
