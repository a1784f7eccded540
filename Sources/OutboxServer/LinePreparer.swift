import Dispatch
import OutboxJSON
import OutboxSupport
import OutboxTransport
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The second thread of `--threads 2`: prepares the fast saves of a batch's last messages
/// (`Server.handle(_:)` says how the two threads share a batch).
///
/// Between `start` and `wait` the preparer reads the batch and writes only its own `saves` and
/// `bodies`; the loop reads them only after `wait`. The words they share are atomics. The thread
/// waits for the next batch by spinning for a short while (batches follow each other within a
/// fraction of a millisecond under load), then sleeps; it ends with its `LinePreparer`.
final class LinePreparer {
  /// Fewer messages than this are answered on the loop's thread alone: waking the preparer would
  /// cost more than it saves.
  static let minimumLines = 16

  private let worker: Worker

  /// Nil when the system would not make the thread.
  init?(config: Configuration) {
    worker = Worker(config: config)
    let worker = self.worker
    guard DetachedThread.detach({ worker.run() }) else { return nil }
  }

  deinit { worker.stop() }

  /// Hands `batch` to the preparer, which starts from its end.
  func start(_ batch: FramedBatch) { worker.post(batch) }

  /// Takes message `index` (the next from the start) for the loop; false when the preparer has it.
  func claimForLoop(_ index: Int) -> Bool { worker.claimForLoop(index) }

  /// Waits until the preparer has prepared every message it took.
  func wait() { worker.waitUntilFinished() }

  /// Waits until the preparer has taken a message of the batch (`Configuration.preparerHeadStart`).
  func waitForFirstClaim(of batch: FramedBatch) { worker.waitForFirstClaim(count: batch.entries.count) }

  /// Per message: the fast save prepared from it (after `wait`).
  var saves: [FastSave?] { worker.saves }

  /// The body prepared from message `index` (its members, without `time`).
  func body(of index: Int) -> ArraySlice<UInt8> { worker.bodies[worker.ranges[index]] }
}

/// The state the loop and the preparer's thread share.
private final class Worker: @unchecked Sendable {
  let config: Configuration
  /// Low 32 bits: how many messages the loop took from the start; high 32 bits: the first message
  /// the preparer took from the end. A message belongs to whichever side moved its bound past it.
  private let claims = Atomic<UInt64>(0)
  /// The last batch the loop posted, and the last the thread finished.
  private let posted = Atomic<UInt64>(0)
  private let finished = Atomic<UInt64>(0)
  private let sleeping = Atomic<Bool>(false)
  private let stopping = Atomic<Bool>(false)
  private let wake = DispatchSemaphore(value: 0)
  /// The loop sleeps on `done` while it waits for the thread.
  private let loopWaiting = Atomic<Bool>(false)
  private let done = DispatchSemaphore(value: 0)
  private let scratch = TapeScratch()
  private var batch = FramedBatch()
  private(set) var saves: [FastSave?] = []
  private(set) var ranges: [Range<Int>] = []
  private(set) var bodies: [UInt8] = []

  init(config: Configuration) { self.config = config }

  /// How long the thread spins for the next batch before it sleeps.
  private static let spinSeconds = 0.0005
  /// How many times the loop looks before it sleeps.
  private static let waitSpins = 2000

  func post(_ batch: FramedBatch) {
    let count = batch.entries.count
    self.batch = batch
    saves.removeAll(keepingCapacity: true)
    saves.append(contentsOf: repeatElement(nil, count: count))
    ranges.removeAll(keepingCapacity: true)
    ranges.append(contentsOf: repeatElement(0..<0, count: count))
    bodies.removeAll(keepingCapacity: bodies.capacity <= 1 << 24)
    claims.store(UInt64(count) << 32, ordering: .relaxed)
    posted.add(1, ordering: .sequentiallyConsistent)
    if sleeping.load(ordering: .sequentiallyConsistent) { wake.signal() }
  }

  /// Spins a little (the thread is usually within one message of done), then sleeps: on a busy
  /// machine a spinning loop would take the core the thread needs.
  func waitUntilFinished() {
    let target = posted.load(ordering: .relaxed)
    var spins = 0
    while finished.load(ordering: .acquiring) != target {
      spins += 1
      guard spins > Self.waitSpins else {
        if spins > 64 { sched_yield() }  // the thread may be waiting for this core
        continue
      }
      loopWaiting.store(true, ordering: .sequentiallyConsistent)
      if finished.load(ordering: .sequentiallyConsistent) != target { done.wait() }
      loopWaiting.store(false, ordering: .sequentiallyConsistent)
    }
  }

  func stop() {
    stopping.store(true, ordering: .sequentiallyConsistent)
    wake.signal()
  }

  /// The thread's body: each posted batch in turn, until `stop`.
  func run() {
    var seen: UInt64 = 0
    while let next = nextBatch(after: seen) {
      seen = next
      work()
      finished.store(next, ordering: .sequentiallyConsistent)
      if loopWaiting.load(ordering: .sequentiallyConsistent) { done.signal() }
    }
  }

  /// Waits for a batch after `seen`: spins, then sleeps. Nil once stopped.
  private func nextBatch(after seen: UInt64) -> UInt64? {
    var sleepAt = 0.0
    var spins = 0
    while true {
      if stopping.load(ordering: .relaxed) { return nil }
      let now = posted.load(ordering: .acquiring)
      if now != seen { return now }
      sched_yield()  // the loop may need this core to make the next batch
      spins += 1
      guard spins & 15 == 0 else { continue }
      let time = Clock.monotonicSeconds()
      if sleepAt == 0 { sleepAt = time + Self.spinSeconds }
      guard time >= sleepAt else { continue }
      sleeping.store(true, ordering: .sequentiallyConsistent)
      if posted.load(ordering: .sequentiallyConsistent) == seen && !stopping.load(ordering: .sequentiallyConsistent) {
        wake.wait()
      }
      sleeping.store(false, ordering: .sequentiallyConsistent)
      sleepAt = 0
    }
  }

  func waitForFirstClaim(count: Int) {
    while claims.load(ordering: .relaxed) >> 32 == UInt64(count) { sched_yield() }
  }

  /// Takes message `index` (the next from the start) for the loop, unless the thread has it.
  func claimForLoop(_ index: Int) -> Bool {
    var current = claims.load(ordering: .relaxed)
    while true {
      let high = current >> 32
      guard UInt64(index) < high else { return false }
      let (done, found) = claims.compareExchange(
        expected: current, desired: high << 32 | UInt64(index + 1), ordering: .relaxed)
      if done { return true }
      current = found
    }
  }

  /// The next message from the end for the thread, or nil where the loop's part begins.
  private func claim() -> Int? {
    var current = claims.load(ordering: .relaxed)
    while true {
      let high = current >> 32
      let low = current & 0xFFFF_FFFF
      guard high > low else { return nil }
      let (done, found) = claims.compareExchange(
        expected: current, desired: (high - 1) << 32 | low, ordering: .relaxed)
      if done { return Int(high - 1) }
      current = found
    }
  }

  private func work() {
    while let index = claim() {
      guard case .line(let range) = batch.entries[index] else { continue }
      let start = bodies.count
      let save = batch.bytes.withUnsafeBufferPointer {
        FastSave.prepare(UnsafeBufferPointer(rebasing: $0[range]), config: config, scratch: scratch, into: &bodies)
      }
      guard let save else {
        bodies.removeSubrange(start...)
        continue
      }
      saves[index] = save
      ranges[index] = start..<bodies.count
    }
    batch = FramedBatch()  // the loop's batch is uniquely referenced again: it keeps its memory
  }
}
