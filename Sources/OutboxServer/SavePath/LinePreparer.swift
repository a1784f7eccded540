import Dispatch
import OutboxJSON
import OutboxStore
import OutboxSupport
import OutboxTransport
import Synchronization

/// The second thread of `--threads 2`: prepares the fast saves of each batch's last messages
/// (`SavePath` says how the two threads share a batch).
///
/// Batches are posted in turn into two slots, so the thread can prepare one batch while the loop
/// stores the end of the one before. Between `post` and `waitUntilFinished` the thread reads the
/// slot's batch and writes only the slot's `saves`, `ranges` and `bodies`; the loop reads them only
/// after. The words they share are atomics. The thread waits for the next batch by spinning for a
/// short while (batches follow each other within a fraction of a millisecond under load), yielding
/// the core, then sleeps; it ends with its `LinePreparer`.
///
/// While it waits, the thread also runs the jobs handed to it aside (`runAside`): the journal's
/// writes, so that they take this thread's idle time instead of a third thread's turn on a core.
final class LinePreparer {
  /// Fewer messages than this are answered on the loop's thread alone: waking the preparer would
  /// cost more than it saves.
  static let minimumLines = 16

  private let worker: Worker

  /// Nil when the system would not make the thread.
  init?(limits: FastSave.Limits) {
    worker = Worker(limits: limits)
    let worker = self.worker
    guard DetachedThread.detach({ worker.run() }) else { return nil }
  }

  deinit { worker.stop() }

  /// Runs `job` on the thread before it takes the next batch (at once when the thread has ended).
  /// The jobs run in the order given.
  func runAside(_ job: @escaping @Sendable () -> Void) { worker.runAside(job) }

  /// Hands `batch` to the thread, which starts from its end; returns the batch's number.
  func post(_ batch: FramedBatch) -> UInt64 { worker.post(batch) }

  /// Takes up to `count` messages from `index` (the next from the start) of batch `number` for the
  /// loop; returns how many it took (0: the thread has the next one).
  func claimForLoop(_ number: UInt64, _ index: Int, upTo count: Int) -> Int {
    worker.slot(number).claimForLoop(index, upTo: count)
  }

  /// Waits until the thread has prepared every message it took of batch `number`.
  func waitUntilFinished(_ number: UInt64) { worker.waitUntilFinished(number) }

  /// Waits until the thread has taken the last quarter of batch `number` (at least one message), so
  /// it takes part however late it is scheduled (`Configuration.preparerHeadStart`).
  func waitForHeadStart(_ number: UInt64, count: Int) {
    worker.slot(number).waitForClaims(count: count, taken: max(1, count / 4))
  }

  /// Calls `body` with what the thread prepared of batch `number`, read in place (no copy, and
  /// no reference counted per message); after `waitUntilFinished(number)`.
  func withPrepared<R>(_ number: UInt64, _ body: (PreparedSaves) -> R) -> R {
    let slot = worker.slot(number)
    return PreparedSaves.over(slot.saves, slot.ranges, slot.bodies, body)
  }
}

/// What was prepared of a batch's messages from `first` on (by the second thread inside
/// `withPrepared`, or by the loop for a group of its own: `SavePath.answerOwn`).
struct PreparedSaves {
  let saves: UnsafeBufferPointer<FastSave?>
  let ranges: UnsafeBufferPointer<Range<Int>>
  let bodies: UnsafeRawBufferPointer
  /// The batch's index of the first message held.
  var first = 0

  /// The fast save prepared from message `index`, or nil.
  func save(_ index: Int) -> FastSave? { saves[index - first] }

  /// The body of message `index`'s save: its members, without `time`.
  func body(_ index: Int) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(rebasing: bodies[ranges[index - first]])
  }

  /// Calls `body` with these arrays seen as the saves prepared from messages `first...` (read in
  /// place: no copy, and no reference counted per message).
  static func over<R>(
    _ saves: [FastSave?], _ ranges: [Range<Int>], _ bodies: [UInt8], first: Int = 0, _ body: (PreparedSaves) -> R
  ) -> R {
    saves.withUnsafeBufferPointer { saves in
      ranges.withUnsafeBufferPointer { ranges in
        bodies.withUnsafeBytes { bodies in
          body(PreparedSaves(saves: saves, ranges: ranges, bodies: bodies, first: first))
        }
      }
    }
  }

  /// The user hashes (`BodyParts.userHash`) of the saves prepared from messages `range`, into `hashes`.
  func userHashes(_ range: Range<Int>, into hashes: inout [UInt32]) {
    hashes.removeAll(keepingCapacity: true)
    for case let save? in saves[(range.lowerBound - first)..<(range.upperBound - first)] where save.parts.userEnd > 0 {
      hashes.append(save.parts.userHash)
    }
  }
}

/// One batch's work: what the loop and the thread claimed, and what the thread prepared.
private final class Slot: @unchecked Sendable {
  /// Low 32 bits: how many messages the loop took from the start; high 32 bits: the first message
  /// the thread took from the end. A message belongs to whichever side moved its bound past it.
  let claims = Atomic<UInt64>(0)
  var batch = FramedBatch()
  var saves: [FastSave?] = []
  var ranges: [Range<Int>] = []
  var bodies: [UInt8] = []

  func reset(_ batch: FramedBatch) {
    let count = batch.entries.count
    self.batch = batch
    saves.removeAll(keepingCapacity: true)
    saves.append(contentsOf: repeatElement(nil, count: count))
    ranges.removeAll(keepingCapacity: true)
    ranges.append(contentsOf: repeatElement(0..<0, count: count))
    bodies.removeAll(keepingCapacity: bodies.capacity <= 1 << 24)
    claims.store(UInt64(count) << 32, ordering: .relaxed)
  }

  func claimForLoop(_ index: Int, upTo count: Int) -> Int {
    var current = claims.load(ordering: .relaxed)
    while true {
      let high = current >> 32
      guard UInt64(index) < high else { return 0 }
      let end = min(high, UInt64(index + count))
      let (done, found) = claims.compareExchange(expected: current, desired: high << 32 | end, ordering: .relaxed)
      if done { return Int(end) - index }
      current = found
    }
  }

  /// The next message from the end for the thread, or nil where the loop's part begins.
  func claimForThread() -> Int? {
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

  /// Waits until the thread has taken `taken` messages from the end of a batch of `count`.
  func waitForClaims(count: Int, taken: Int) {
    while claims.load(ordering: .relaxed) >> 32 > UInt64(count - taken) { sched_yield() }
  }

  /// The thread's part: prepares every message it can take.
  func work(limits: FastSave.Limits, scratch: TapeScratch) {
    while let index = claimForThread() {
      guard let prepared = FastSave.prepare(batch, index, limits: limits, scratch: scratch, into: &bodies) else {
        continue
      }
      saves[index] = prepared.save
      ranges[index] = prepared.body
    }
    batch = FramedBatch()  // the loop's batch is uniquely referenced again once it is done with it
  }
}

/// The thread and the two slots.
private final class Worker: @unchecked Sendable {
  let limits: FastSave.Limits
  private let slots = [Slot(), Slot()]
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
  /// Jobs to run aside (`runAside`), and whether the thread has ended (then they run in place).
  private let aside = Mutex<(jobs: [@Sendable () -> Void], ended: Bool)>(([], false))
  private let asideWaiting = Atomic<Bool>(false)

  init(limits: FastSave.Limits) { self.limits = limits }

  /// How long the thread spins for the next batch before it sleeps.
  private static let spinSeconds = 0.0005
  /// How many times the loop looks before it sleeps.
  private static let waitSpins = 2000

  func slot(_ number: UInt64) -> Slot { slots[Int(number & 1)] }

  /// The slot of the batch before must be done with (the loop committed it): each slot serves every
  /// other batch.
  func post(_ batch: FramedBatch) -> UInt64 {
    let number = posted.load(ordering: .relaxed) + 1
    slot(number).reset(batch)
    posted.store(number, ordering: .sequentiallyConsistent)
    if sleeping.load(ordering: .sequentiallyConsistent) { wake.signal() }
    return number
  }

  /// Spins a little (the thread is usually within one message of done), yielding the core, then
  /// sleeps: on a busy machine a spinning loop would take the core the thread needs.
  func waitUntilFinished(_ number: UInt64) {
    var spins = 0
    while finished.load(ordering: .acquiring) < number {
      spins += 1
      guard spins > Self.waitSpins else {
        if spins > 64 { sched_yield() }
        continue
      }
      loopWaiting.store(true, ordering: .sequentiallyConsistent)
      if finished.load(ordering: .sequentiallyConsistent) < number { done.wait() }
      loopWaiting.store(false, ordering: .sequentiallyConsistent)
    }
  }

  func stop() {
    stopping.store(true, ordering: .sequentiallyConsistent)
    wake.signal()
  }

  func runAside(_ job: @escaping @Sendable () -> Void) {
    let queued = aside.withLock { state in
      if !state.ended { state.jobs.append(job) }
      return !state.ended
    }
    guard queued else { return job() }
    asideWaiting.store(true, ordering: .sequentiallyConsistent)
    if sleeping.load(ordering: .sequentiallyConsistent) { wake.signal() }
  }

  /// Runs the jobs handed aside so far; with `ending`, none is taken after.
  private func runAsideJobs(ending: Bool = false) {
    guard ending || asideWaiting.load(ordering: .acquiring) else { return }
    asideWaiting.store(false, ordering: .sequentiallyConsistent)
    let jobs = aside.withLock { state in
      defer { state.jobs.removeAll() }
      state.ended = ending
      return state.jobs
    }
    for job in jobs { job() }
  }

  /// The thread's body: each posted batch in turn, until `stop`.
  func run() {
    var seen: UInt64 = 0
    while nextBatch(after: seen) {
      seen += 1
      slot(seen).work(limits: limits, scratch: scratch)
      finished.store(seen, ordering: .sequentiallyConsistent)
      if loopWaiting.load(ordering: .sequentiallyConsistent) { done.signal() }
    }
    runAsideJobs(ending: true)
  }

  /// Waits until a batch after `seen` is posted: spins, yielding the core, then sleeps. False once
  /// stopped.
  private func nextBatch(after seen: UInt64) -> Bool {
    var sleepAt = 0.0
    var spins = 0
    while true {
      runAsideJobs()
      if stopping.load(ordering: .relaxed) { return false }
      if posted.load(ordering: .acquiring) > seen { return true }
      sched_yield()  // the loop may need this core to make the next batch
      spins += 1
      guard spins & 15 == 0 else { continue }
      let time = Clock.monotonicSeconds()
      if sleepAt == 0 { sleepAt = time + Self.spinSeconds }
      guard time >= sleepAt else { continue }
      sleeping.store(true, ordering: .sequentiallyConsistent)
      if posted.load(ordering: .sequentiallyConsistent) == seen && !stopping.load(ordering: .sequentiallyConsistent)
        && !asideWaiting.load(ordering: .sequentiallyConsistent)
      {
        wake.wait()
      }
      sleeping.store(false, ordering: .sequentiallyConsistent)
      sleepAt = 0
    }
  }
}

extension FastSave {
  /// Prepares message `index` of `batch` into `bodies`: the save, with where its body lies there; nil
  /// (and `bodies` as it was) for any other message.
  static func prepare(
    _ batch: FramedBatch, _ index: Int, limits: Limits, scratch: TapeScratch, into bodies: inout [UInt8]
  ) -> (save: FastSave, body: Range<Int>)? {
    guard case .line(let line) = batch.entries[index] else { return nil }
    let start = bodies.count
    let save = batch.bytes.withUnsafeBufferPointer {
      prepare(UnsafeBufferPointer(rebasing: $0[line]), limits: limits, scratch: scratch, into: &bodies)
    }
    guard let save else {
      bodies.removeSubrange(start...)
      return nil
    }
    return (save, start..<bodies.count)
  }
}
