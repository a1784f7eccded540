import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxStore
import OutboxSupport
import OutboxTransport

/// The hot request's path: a `saveCustomEvent` line that passes every rule is read by a fast tier
/// (`FastSave.prepare`: the one-pass scan, `OneScanSave`, else the tape save, `TapeSave`) and
/// stored and answered straight away, without `Envelope`, `Request`, `MethodTable`, `Params` or
/// `SaveResult`'s general dispatch. Anything else, any issue (even a warning), and a save the store
/// would refuse go to the general path (`Server.handleGeneral`, then `SaveCustomEvent`) untouched.
///
/// The tiers read with the same reader and check and write the item with the same code as the
/// general path (`SaveCustomEvent.appendBody`, `CustomEventRules`, `UserIdentifier.locate`), make the
/// same calls in the same order (clock, id, admit, seq, store, journal; the clock read once, for the
/// body's `time` and the item's saved time) and reply through the same reply path (`Burst.reply`);
/// `FastSaveTests` compares the two, with a journal.
///
/// Two threads: with `--threads 2` and at least `LinePreparer.minimumLines` messages, the loop posts
/// each read's batch to the `LinePreparer`, whose thread prepares fast saves (which touch nothing
/// but the line and the configuration) from the batch's end towards its start. Meanwhile the loop
/// writes out the replies it holds, stores and answers the batch before (`answerPosted`), and goes
/// back for the next read: the new batch waits as `posted` until the next batch comes, or the loop
/// writes replies with no input waiting, or stops. Then the loop answers the messages the other
/// thread has not taken yet itself, from the start, until it meets the part the thread took
/// (`LinePreparer` keeps each message to one side), and stores and answers that part as prepared
/// (or through the general path for what the thread could not prepare). The loop takes its own
/// messages a group at a time (`answerOwn`): it prepares the group as the thread would, reads the
/// group's users ahead, then stores and answers each in order. So every store change, reply and
/// journal record happens on the loop's thread, in the order of the input, exactly as with one
/// thread.
final class SavePath {
  /// False to send every line through the general path (for tests that compare the two).
  var isOn: Bool
  private let limits: FastSave.Limits
  private let threads: Int
  private let headStart: Bool
  /// The tape save's node memory, reused from one line to the next.
  private let tape = TapeScratch()
  /// The item bytes: each save appends its body after the last one's (emptying it for each cost
  /// some 100 instructions a save), and it is emptied once past 64 KiB (`trimBody`).
  private var body: [UInt8] = []
  /// The user hashes of a prepared batch's saves, read ahead before they are stored (`warmUsers`).
  private var warmHashes: [UInt32] = []
  /// The loop's own group of prepared saves (`answerOwn`).
  private var own = OwnGroup()
  /// The last batch posted to the second thread, not yet answered.
  private var posted: PostedBatch?
  /// The second thread, made when the first batch comes (with `--threads 2`).
  private lazy var preparer: LinePreparer? = threads > 1 ? LinePreparer(limits: limits) : nil
  /// The store writes its journal on the second thread (`LinePreparer.runAside`).
  private var writesAside = false
  /// Saves the second thread prepared and this one stored (for tests).
  private(set) var preparedSaves = 0

  init(_ config: Configuration, isOn: Bool) {
    self.isOn = isOn
    limits = FastSave.Limits(config)
    threads = config.threads
    headStart = config.preparerHeadStart
  }

  /// True when the loop should hand over each read's messages as one batch: a second thread is
  /// configured and the fast save is on. Else it hands them over one by one, as they are framed.
  var handlesBatches: Bool { isOn && threads > 1 }

  // MARK: - One line

  /// Stores and answers `line` as a fast save and returns true, or changes nothing and returns false.
  @inline(__always)
  func save(_ line: UnsafeBufferPointer<UInt8>, _ server: Server) -> Bool {
    trimBody()
    let start = body.count
    guard let save = FastSave.prepare(line, limits: limits, scratch: tape, into: &body) else { return false }
    return Self.commit(save, body: &body, from: start, now: server.service.clock.now(), server)
  }

  /// The loop's part of a fast save prepared into `body[start...]` (its members, without `time`):
  /// the id, the store and the reply, with `now` for the body's `time` and the item's saved time.
  /// False, with nothing changed, when the store refuses it (before any change: the general path
  /// then answers, with the refusal). The buffer comes in as `inout` (not read from `self`), so
  /// reading it in place costs no reference count.
  @inline(__always)
  private static func commit(
    _ save: FastSave, body: inout [UInt8], from start: Int, now: Int64, _ server: Server
  ) -> Bool {
    let service = server.service
    body.appendTimeMember(ms: now, &service.timeText)
    let result = body.withUnsafeBytes { bytes in
      try? service.save(
        kind: .customEvent, clientID: nil, hasUser: save.hasUser,
        body: UnsafeRawBufferPointer(rebasing: bytes[start...]),
        warnings: [], now: now, parts: save.parts)
    }
    guard let result else { return false }
    server.reply(to: save.id, result)
    return true
  }

  /// Empties the item buffer once past 64 KiB; one grown well past that by a big item is let go.
  private func trimBody() {
    if body.count > 1 << 16 { body.removeAll(keepingCapacity: body.capacity <= 1 << 17) }
  }

  // MARK: - Batches, with a second thread

  /// `whilePreparing` runs once the second thread has the batch (or at once without it): the loop
  /// writes out the replies it holds there, so the thread prepares while this one writes.
  func handle(_ batch: FramedBatch, _ server: Server, whilePreparing: () -> Void) {
    let count = batch.entries.count
    let minimum = headStart ? 2 : LinePreparer.minimumLines
    guard isOn, count >= minimum, let preparer else {
      whilePreparing()
      answerPosted(server)
      batch.forEach { server.handle(framed: $0) }
      return
    }
    if !writesAside {  // the journal's writes run in the thread's idle time
      writesAside = true
      server.service.store.writeJournal { [weak preparer] job in
        if let preparer { preparer.runAside(job) } else { job() }
      }
    }
    let number = preparer.post(batch)
    whilePreparing()
    answerPosted(server)  // the batch before, while the thread goes on with this one
    if headStart { preparer.waitForHeadStart(number, count: count) }
    posted = PostedBatch(batch: batch, number: number)
  }

  /// How many prepared saves have their users read ahead at once: enough for the reads to overlap,
  /// few enough that what they read is still in the cache when the saves come.
  private static let warmAhead = 32

  /// Answers the last batch: what the second thread has not taken, then what it prepared.
  func answerPosted(_ server: Server) {
    guard let posted, let preparer else { return }
    self.posted = nil
    var start = 0
    while true {
      let taken = preparer.claimForLoop(posted.number, start, upTo: Self.warmAhead)
      guard taken > 0 else { break }
      answerOwn(posted.batch, start..<start + taken, server)
      start += taken
    }
    preparer.waitUntilFinished(posted.number)
    preparer.withPrepared(posted.number) { prepared in
      preparedSaves += answerPrepared(posted.batch, start..<posted.batch.entries.count, prepared, server)
    }
  }

  /// A group of messages the loop took for itself: prepared as the second thread prepares its part,
  /// their users read ahead together, then stored and answered in order. Storing one save after
  /// another straight from its line waited on a cache miss in the user table for each.
  private func answerOwn(_ batch: FramedBatch, _ range: Range<Int>, _ server: Server) {
    own.prepare(batch, range, limits: limits, scratch: tape)
    _ = own.withPrepared(first: range.lowerBound) { answerPrepared(batch, range, $0, server) }
  }

  /// Stores and answers the prepared messages `range` in order, a group of `warmAhead` at a time
  /// with the next group's users read ahead while this one is stored; returns how many were stored
  /// as prepared.
  private func answerPrepared(
    _ batch: FramedBatch, _ range: Range<Int>, _ prepared: PreparedSaves, _ server: Server
  ) -> Int {
    let (start, end, store, clock) = (range.lowerBound, range.upperBound, server.service.store, server.service.clock)
    warmUsers(prepared, start..<min(end, start + Self.warmAhead), store)
    // One capture time for a group's saves, read as its storing starts, and again after any
    // message that went another way (the clock is read about once per group, not per save).
    var now: Int64? = nil
    var stored = 0
    for index in range {
      if (index - start) % Self.warmAhead == 0 {  // the group after this one: its reads land while this one is stored
        warmUsers(prepared, min(end, index + Self.warmAhead)..<min(end, index + 2 * Self.warmAhead), store)
        now = nil
      }
      let time = now ?? clock.now()
      let saved = answerPrepared(batch, index, prepared, now: time, server)
      if saved { stored += 1 }
      now = saved ? time : nil
    }
    return stored
  }

  /// Reads ahead, all at once, what storing the prepared saves `range` will read in the user table.
  private func warmUsers(_ prepared: PreparedSaves, _ range: Range<Int>, _ store: Store) {
    guard !range.isEmpty else { return }
    prepared.userHashes(range, into: &warmHashes)
    store.items.warm(userHashes: warmHashes)
  }

  /// A prepared message (by the second thread, or by the loop in `answerOwn`): stored from what was
  /// prepared, with `now` as its time; or, when nothing was prepared, the server shut down or the
  /// store refuses, handled as any line (false).
  private func answerPrepared(
    _ batch: FramedBatch, _ index: Int, _ prepared: PreparedSaves, now: Int64, _ server: Server
  ) -> Bool {
    guard server.service.lifecycle.exitCode == nil else { return false }
    guard let save = prepared.save(index) else {
      batch.withEntry(index) { framed in
        guard case .line(let line) = framed else { return server.handle(framed: framed) }
        server.handleGeneral(line: line)  // the preparer found no fast save in it: the same code would not
      }
      return false
    }
    if !server.service.lifecycle.shutDown {
      trimBody()
      let start = body.count
      body.appendBytes(prepared.body(index))
      if Self.commit(save, body: &body, from: start, now: now, server) { return true }
    }
    batch.withEntry(index) { server.handle(framed: $0) }
    return false
  }
}

/// The saves the loop prepares of a group of its own messages (`SavePath.answerOwn`): what a
/// `LinePreparer` slot holds for the thread's part, for a few messages at a time.
private struct OwnGroup {
  private var saves: [FastSave?] = []
  private var ranges: [Range<Int>] = []
  private var bodies: [UInt8] = []

  /// Prepares the fast saves of `batch`'s messages `range` (nil for any other message).
  mutating func prepare(_ batch: FramedBatch, _ range: Range<Int>, limits: FastSave.Limits, scratch: TapeScratch) {
    saves.removeAll(keepingCapacity: true)
    ranges.removeAll(keepingCapacity: true)
    bodies.removeAll(keepingCapacity: bodies.capacity <= 1 << 17)
    for index in range {
      let prepared = FastSave.prepare(batch, index, limits: limits, scratch: scratch, into: &bodies)
      saves.append(prepared?.save)
      ranges.append(prepared?.body ?? 0..<0)
    }
  }

  func withPrepared<R>(first: Int, _ body: (PreparedSaves) -> R) -> R {
    PreparedSaves.over(saves, ranges, bodies, first: first, body)
  }
}

/// A batch posted to the second thread, waiting to be answered.
private struct PostedBatch {
  var batch: FramedBatch
  var number: UInt64
}

/// A fast save read and checked, not yet stored: what `FastSave.prepare` found, with the item's
/// members (without `time`) appended to the caller's buffer. Preparing reads nothing but the line
/// and the configuration, so it may run on another thread (`LinePreparer`).
struct FastSave: Sendable {
  var id: RequestID
  var hasUser: Bool
  /// Where the body's user and label end (found as it is written, on the thread that writes it).
  var parts: BodyParts

  /// What preparing reads of the configuration: plain values, so passing them copies no references.
  struct Limits: Sendable {
    var maxDepth: Int
    var maxBatch: Int
    var domain: DomainLimits

    init(_ config: Configuration) {
      maxDepth = config.maxDepth
      maxBatch = config.maxBatch
      domain = config.domain
    }
  }

  /// Reads `line` as a fast save and appends its body to `body`; nil (with `body` in any state)
  /// when the line is anything else, has any issue, or names its user in another form than the
  /// stored one (the general path rewrites those). A line `OneScanSave` takes is read in its one
  /// pass; the rest through a tape (`TapeSave`).
  static func prepare(
    _ line: UnsafeBufferPointer<UInt8>, limits: Limits, scratch: TapeScratch, into body: inout [UInt8]
  ) -> FastSave? {
    if let save = OneScanSave.prepare(line, limits: limits, into: &body) { return save }
    return TapeSave.prepare(line, limits: limits, scratch: scratch, into: &body)
  }
}
