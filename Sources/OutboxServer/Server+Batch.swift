import OutboxStore
import OutboxSupport
package import OutboxTransport

/// The messages of one read, answered in order; their fast saves prepared on a second thread.
///
/// With `--threads 2` and at least `LinePreparer.minimumLines` messages, the loop posts the batch to
/// the `LinePreparer`, whose thread reads and checks fast saves (`FastSave.prepare`, which touches
/// nothing but the line and the configuration) from the batch's end towards its start. Meanwhile
/// this thread writes out the replies it holds, stores and answers the batch before
/// (`answerPostedBatch`), and goes back for the next read: the new batch waits as `postedBatch`
/// until the next batch comes, or the loop writes replies with no input waiting, or stops. Then the
/// loop answers the messages the other thread has not taken yet itself, from the start, as
/// `handle(framed:)` always does, until it meets the part the thread took (`LinePreparer` keeps each
/// message to one side), and stores and answers that part as prepared (`commitFastSave`: id,
/// admission, store, reply; or the general path for what the thread could not prepare). So the loop
/// prepares only what the thread has not reached when it is needed, and every store change, reply
/// and journal record happens on this thread, in the order of the input, exactly as with one thread.
extension Server {
  /// True when the loop should hand over each read's messages as one batch: a second thread is
  /// configured and the fast save is on. Else it hands them over one by one, as they are framed.
  package var handlesBatches: Bool { fastSaves && service.config.threads > 1 }

  /// `whilePreparing` runs once the second thread has the batch (or at once without it): the loop
  /// writes out the replies it holds there, so the thread prepares while this one writes.
  package func handle(_ batch: FramedBatch, whilePreparing: () -> Void = {}) {
    let count = batch.entries.count
    let minimum = service.config.preparerHeadStart ? 2 : LinePreparer.minimumLines
    guard fastSaves, count >= minimum, let preparer = linePreparer else {
      whilePreparing()
      answerPostedBatch()
      batch.forEach { handle(framed: $0) }
      return
    }
    let number = preparer.post(batch)
    whilePreparing()
    answerPostedBatch()  // the batch before, while the thread goes on with this one
    if service.config.preparerHeadStart { preparer.waitForHeadStart(number, count: count) }
    postedBatch = PostedBatch(batch: batch, number: number)
  }

  /// How many prepared saves have their users read ahead at once: enough for the reads to overlap,
  /// few enough that what they read is still in the cache when the saves come.
  static let warmAhead = 32

  /// Answers the last batch: what the second thread has not taken, then what it prepared.
  package func answerPostedBatch() {
    guard let posted = postedBatch, let preparer = linePreparer else { return }
    postedBatch = nil
    var start = 0
    while preparer.claimForLoop(posted.number, start) {
      posted.batch.withEntry(start) { handle(framed: $0) }
      start += 1
    }
    preparer.waitUntilFinished(posted.number)
    preparer.withPrepared(posted.number) { prepared in
      let end = posted.batch.entries.count
      warmUsers(prepared, start..<min(end, start + Self.warmAhead))
      // One capture time for a group's saves, read as its storing starts, and again after any
      // message that went another way (the clock is read about once per group, not per save).
      var now: Int64? = nil
      for index in start..<end {
        if (index - start) % Self.warmAhead == 0 {  // the group after this one: its reads land while this one is stored
          warmUsers(prepared, min(end, index + Self.warmAhead)..<min(end, index + 2 * Self.warmAhead))
          now = nil
        }
        let time = now ?? service.clock.now()
        now = answerPrepared(posted.batch, index, prepared, now: time) ? time : nil
      }
    }
  }

  /// Reads ahead, all at once, what storing the prepared saves `range` will read in the user table.
  private func warmUsers(_ prepared: PreparedSaves, _ range: Range<Int>) {
    guard !range.isEmpty else { return }
    prepared.userHashes(range, into: &warmHashes)
    service.store.items.warm(userHashes: warmHashes)
  }

  /// One framed message, unless `exit` came before it: nothing is read after `exit`.
  package func handle(framed: FramedLine) {
    guard service.lifecycle.exitCode == nil else { return }
    switch framed {
    case .line(let bytes): handle(line: bytes)
    case .tooLong(let length): handleOversizedLine(length: length)
    case .fault(let fault): handleHeaderFault(fault)
    }
  }

  /// A message the preparer took: stored from what it prepared, with `now` as its time; or, when it
  /// prepared nothing, the server shut down or the store refuses, handled as any line (false).
  private func answerPrepared(_ batch: FramedBatch, _ index: Int, _ prepared: PreparedSaves, now: Int64) -> Bool {
    guard service.lifecycle.exitCode == nil else { return false }
    guard let save = prepared.save(index) else {
      batch.withEntry(index) { framed in
        guard case .line(let line) = framed else { return handle(framed: framed) }
        handleGeneral(line: line)  // the preparer found no fast save in it: the same code would not
      }
      return false
    }
    if !service.lifecycle.shutDown {
      trimFastBody()
      let start = fastBody.count
      fastBody.appendBytes(prepared.body(index))
      if commitFastSave(save, body: &fastBody, from: start, now: now) {
        preparedSaves += 1
        return true
      }
    }
    batch.withEntry(index) { handle(framed: $0) }
    return false
  }
}

/// A batch posted to the second thread, waiting to be answered.
struct PostedBatch {
  var batch: FramedBatch
  var number: UInt64
}
