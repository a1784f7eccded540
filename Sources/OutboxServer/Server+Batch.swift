package import OutboxTransport

/// The messages of one read, answered in order; their fast saves prepared on a second thread.
///
/// With `--threads 2` and at least `LinePreparer.minimumLines` messages, the loop posts the batch to
/// the `LinePreparer`, whose thread reads and checks fast saves (`FastSave.prepare`, which touches
/// nothing but the line and the configuration) from the batch's end towards its start. Meanwhile
/// this thread stores and answers the end of the batch before (`finishPreparedTail`), then answers
/// this batch's messages from its start as `handle(framed:)` always does, until it meets the part the
/// other thread took (`LinePreparer` keeps each message to one side). That part waits, prepared, as
/// `preparedTail`: it is stored and answered (`commitFastSave`: clock, id, admission, store, reply;
/// or the general path for what the thread could not prepare) when the next batch comes, or before
/// the loop writes replies with no input waiting, or stops. So every store change, reply and journal
/// record happens on this thread, in the order of the input, exactly as with one thread.
extension Server {
  /// True when the loop should hand over each read's messages as one batch: a second thread is
  /// configured and the fast save is on. Else it hands them over one by one, as they are framed.
  package var handlesBatches: Bool { fastSaves && service.config.threads > 1 }

  package func handle(_ batch: FramedBatch) {
    let count = batch.entries.count
    let minimum = service.config.preparerHeadStart ? 2 : LinePreparer.minimumLines
    guard fastSaves, count >= minimum, let preparer = linePreparer else {
      finishPreparedTail()
      batch.forEach { handle(framed: $0) }
      return
    }
    let number = preparer.post(batch)
    finishPreparedTail()  // the batch before, while the thread starts on this one
    if service.config.preparerHeadStart { preparer.waitForHeadStart(number, count: count) }
    var index = 0
    while preparer.claimForLoop(number, index) {
      batch.withEntry(index) { handle(framed: $0) }
      index += 1
    }
    preparedTail = PreparedTail(batch: batch, number: number, start: index)
  }

  /// How many prepared saves have their users read ahead at once: enough for the reads to overlap,
  /// few enough that what they read is still in the cache when the saves come.
  static let warmAhead = 32

  /// Stores and answers the end of the last batch, which the second thread prepared.
  package func finishPreparedTail() {
    guard let tail = preparedTail, let preparer = linePreparer else { return }
    preparedTail = nil
    preparer.waitUntilFinished(tail.number)
    let end = tail.batch.entries.count
    for index in tail.start..<end {
      if (index - tail.start) % Self.warmAhead == 0 {  // the next group's users, read ahead together
        preparer.userHashes(tail.number, index..<min(end, index + Self.warmAhead), into: &warmHashes)
        service.store.items.warm(userHashes: warmHashes)
      }
      answerPrepared(tail.batch, index, tail.number, preparer)
    }
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

  /// A message the preparer took: stored from what it prepared, or, when it prepared nothing, the
  /// server shut down or the store refuses, handled as any line.
  private func answerPrepared(_ batch: FramedBatch, _ index: Int, _ number: UInt64, _ preparer: LinePreparer) {
    guard service.lifecycle.exitCode == nil else { return }
    guard let (save, prepared) = preparer.prepared(number, index) else {
      batch.withEntry(index) { framed in
        guard case .line(let line) = framed else { return handle(framed: framed) }
        handleGeneral(line: line)  // the preparer found no fast save in it: the same code would not
      }
      return
    }
    if !service.lifecycle.shutDown {
      var body = takeFastBody()
      body.append(contentsOf: prepared)
      let stored = commitFastSave(save, body: &body)
      fastBody = body
      if stored {
        preparedSaves += 1
        return
      }
    }
    batch.withEntry(index) { handle(framed: $0) }
  }
}

/// The part of a batch the second thread took, waiting to be stored and answered.
struct PreparedTail {
  var batch: FramedBatch
  var number: UInt64
  /// The first message the loop did not take.
  var start: Int
}
