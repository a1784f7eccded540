package import OutboxTransport

/// The messages of one read, answered in order; their fast saves prepared on a second thread.
///
/// With `--threads 2` and at least `LinePreparer.minimumLines` messages, the `LinePreparer` reads and
/// checks fast saves (`FastSave.prepare`, which touches nothing but the line and the configuration)
/// from the end of the batch towards its start, while this thread answers messages from the start
/// as `handle(framed:)` always does. Each message is taken by one side only (`LinePreparer.claims`).
/// Where the two meet, this thread waits for the preparer, then stores and answers the rest in order
/// (`commitFastSave`: clock, id, admission, store, reply), or sends a message the preparer could not
/// take through the general path. So every store change, reply and journal record happens on this
/// thread, in the order of the input, exactly as without the second thread.
extension Server {
  package func handle(_ batch: FramedBatch) {
    let count = batch.entries.count
    guard fastSaves, count >= LinePreparer.minimumLines, let preparer = linePreparer else {
      for index in 0..<count { batch.withEntry(index) { handle(framed: $0) } }
      return
    }
    preparer.start(batch)
    if service.config.preparerHeadStart { preparer.waitForFirstClaim(of: batch) }
    var index = 0
    while preparer.claimForLoop(index) {
      batch.withEntry(index) { handle(framed: $0) }
      index += 1
    }
    preparer.wait()
    while index < count {
      answerPrepared(batch, index, preparer)
      index += 1
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
  private func answerPrepared(_ batch: FramedBatch, _ index: Int, _ preparer: LinePreparer) {
    guard service.lifecycle.exitCode == nil else { return }
    guard let save = preparer.saves[index] else {
      batch.withEntry(index) { framed in
        guard case .line(let line) = framed else { return handle(framed: framed) }
        handleGeneral(line: line)  // the preparer found no fast save in it: the same code would not
      }
      return
    }
    if !service.lifecycle.shutDown {
      var body = takeFastBody()
      body.append(contentsOf: preparer.body(of: index))
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
