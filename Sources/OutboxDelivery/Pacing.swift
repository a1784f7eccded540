import Synchronization

/// The client-side limiter: at most `limit.count` requests in any window of `limit.seconds`, as
/// Braze counts them on arrival, whatever the network and either side's scheduling do (plus a margin
/// of 5 ms, or 1% of a window under half a second).
///
/// A request holds its slot from its start until `limit.seconds` after its answer came back: it
/// reached Braze before it was answered, so the next request that takes the slot arrives at least a
/// window later, however long the first one travelled. A request still in flight always holds its slot.
/// The price is one round trip per window: at 100 ms and `500/1`, at most 500 requests per 1.1 s
/// (issue 41 weighed freeing slots a window after the start instead: exact only while the time from
/// a request's start to its arrival varies by less than the margin, which a loaded server, a new
/// connection or a stall before sending break).
///
/// Starts are also spread out: after a burst of a tenth of the limit, at most one per
/// `limit.seconds / limit.count` (a cell-rate rule, GCRA). The window rule alone let a backlog go as
/// 500 requests in the first few hundred milliseconds of each window and then nothing: the bursts
/// overloaded the server, its round trips grew, and each slot was held longer (issue 41).
struct Pacing {
  var limit: RateLimit
  private var slots: [Slot] = []
  private var lastToken = 0
  /// The cell-rate rule's theoretical time of the next start (monotonic seconds).
  private var nextStart = -Double.infinity

  private struct Slot {
    var token: Int
    /// Monotonic seconds: the start while in flight, then the time the answer came back.
    var time: Double
    var done: Bool
  }

  init(_ limit: RateLimit) { self.limit = limit }

  private var window: Double { limit.seconds + min(0.005, limit.seconds * 0.01) }

  private mutating func prune(_ now: Double) {
    let window = self.window
    slots.removeAll { $0.done && now - $0.time >= window }
  }

  /// Seconds between starts once the burst allowance is spent, and that allowance, as the time it
  /// lets starts run ahead of the steady pace.
  private var spacing: Double { limit.seconds / Double(max(1, limit.count)) }
  private var burstAhead: Double { spacing * Double(max(0, limit.count / 10 - 1)) + 1e-9 }  // + rounding

  /// Nil when a request may start now, else the monotonic time it may (a slot frees up, or the
  /// pace allows the next start).
  mutating func blockedUntil(_ now: Double) -> Double? {
    let paced = nextStart - burstAhead
    if now < paced { return paced }
    prune(now)
    guard slots.count >= limit.count else { return nil }
    let window = self.window
    let freeing = slots.filter(\.done).map { $0.time + window }.min()
    return freeing ?? now + 0.005  // every slot is in flight: look again soon
  }

  /// A request starts now; returns its slot's token for `answered`.
  mutating func record(_ now: Double) -> Int {
    nextStart = max(nextStart, now) + spacing
    lastToken += 1
    slots.append(Slot(token: lastToken, time: now, done: false))
    return lastToken
  }

  /// The request's answer (or failure) came back at `time`: its slot frees a window later.
  mutating func answered(_ token: Int, at time: Double) {
    guard let index = slots.firstIndex(where: { $0.token == token }) else { return }
    slots[index].time = max(slots[index].time, time)
    slots[index].done = true
  }

  /// Requests started or answered in the last window, and those in flight.
  mutating func recent(_ now: Double) -> Int {
    prune(now)
    return slots.count
  }
}

/// Retry delays: exponential in the failures in a row, capped, with jitter (50–100% of the step).
enum Backoff {
  static func delayMs(failures: Int, baseMs: Int, capMs: Int) -> Int {
    let step = min(capMs, baseMs << min(max(failures - 1, 0), 30))
    return Int.random(in: (step / 2)...max(step / 2, step))
  }
}

/// Results from the background queue, collected by the request loop.
final class Inbox<Value: Sendable>: Sendable {
  private let values = Mutex<[Value]>([])

  func put(_ value: Value) { values.withLock { $0.append(value) } }

  func takeAll() -> [Value] {
    values.withLock { all in
      defer { all.removeAll() }; return all
    }
  }
}
