import OutboxDelivery
import OutboxDomain
import OutboxJSON
package import OutboxJSONRPC
import OutboxStore
import OutboxSupport
package import OutboxTransport

/// Turns request lines into response lines, strictly in order.
///
/// Every request with an id gets exactly one reply; notifications get none, ever. Replies go into
/// the `Burst`, which holds those that wait for the journal commit and renders them once the
/// commit's outcome is known. A long call (`LongCalls`) is answered when its work ends, with a
/// later burst: the only replies that may follow replies to later requests.
package final class Server {
  package let service: Service
  package let table: MethodTable
  /// This burst's replies (`Burst`).
  var burst = Burst()
  /// A batch's members are being handled: a long call among them runs to its end in place.
  var inBatch = false
  /// What an MCP client's `initialize` settled, for the handshake era (`MCP/`).
  var mcp = MCPSession()
  /// The hot save's fast tiers, and the second thread that prepares them (`SavePath`).
  let savePath: SavePath

  /// About how many reply bytes the burst holds so far.
  var burstBytes: Int { burst.byteCount }

  /// Response bytes ready to write: whole lines, each ending in `\n` (`render` fills it).
  package var output: [UInt8] { burst.output }

  /// Empties `output` once it is written.
  package func clearOutput() { burst.clearOutput() }

  /// Commits the journal records gathered since the last commit and settles the waiting replies.
  /// Returns the refusal they get when the write failed.
  @discardableResult
  package func commit() -> RPCError? { burst.commit(service) }

  /// Commits, then writes the burst's replies into `output`. Call only between lines.
  ///
  /// The burst handed over last goes first, once its write landed. With `handOver`, a burst of
  /// saves alone is not committed here: its records start on the journal's writer thread, and its
  /// replies wait in `flight` for the next render, while the loop handles the next input.
  package func render(handOver: Bool = false) {
    burst.renderHandedOver(service)
    if handOver, burst.holdsOnlySaves, service.store.beginCommit() {
      burst.handOver()
      return
    }
    burst.render(service)
    service.store.clearRefusedSaves()
  }

  /// A handed-over burst's replies wait for the next `render`.
  package var repliesWaitForWrite: Bool { burst.hasHandedOver }

  package init(service: Service, table: MethodTable = .standard) {
    self.service = service
    self.table = table
    self.savePath = SavePath(service.config, isOn: table.names.contains(SaveCustomEvent.name))
  }

  /// False to send every line through the general path (for tests that compare the two).
  package var fastSaves: Bool {
    get { savePath.isOn }
    set { savePath.isOn = newValue }
  }

  /// True when the loop should hand over each read's messages as one batch (`SavePath`), else
  /// message by message, as they are framed.
  package var handlesBatches: Bool { savePath.handlesBatches }

  /// Handles one line (without its `\n`, `\r` or BOM): a request, a notification or a batch.
  package func handle(line: UnsafeBufferPointer<UInt8>) {
    if savePath.isOn && !service.lifecycle.shutDown && savePath.save(line, self) { return }
    handleGeneral(line: line)
  }

  /// The messages of one read, answered in order; their fast saves prepared on a second thread
  /// (`SavePath`). `whilePreparing` runs once the second thread has the batch (or at once without
  /// it): the loop writes out the replies it holds there, so the thread prepares while this one writes.
  package func handle(_ batch: FramedBatch, whilePreparing: () -> Void = {}) {
    savePath.handle(batch, self, whilePreparing: whilePreparing)
  }

  /// Answers the batch the second thread prepared last (`SavePath.answerPosted`).
  package func answerPostedBatch() { savePath.answerPosted(self) }

  /// One framed message, unless `exit` came before it: nothing is read after `exit`.
  package func handle(framed: FramedLine) {
    guard service.lifecycle.exitCode == nil else { return }
    switch framed {
    case .line(let bytes): handle(line: bytes)
    case .tooLong(let length): handleOversizedLine(length: length)
    case .fault(let fault): handleHeaderFault(fault)
    }
  }

  /// `handle(line:)` without the fast path.
  func handleGeneral(line: UnsafeBufferPointer<UInt8>) {
    let value: RequestLine
    do {
      value = try RequestLine.read(
        line, maxDepth: service.config.maxDepth, maxBatch: service.config.maxBatch, known: table.known)
    } catch {
      writeError(error, id: .null)
      return
    }
    if case .batch(let members) = value {
      handleBatch(members)
    } else if case .single(let value) = value {
      let mark = burst.mark
      if handle(value) {
        burst.append(UInt8(ascii: "\n"))
      } else {
        burst.discard(from: mark)
      }
    }
  }

  /// Answers a line longer than `--max-line-bytes`; its bytes were discarded unread.
  package func handleOversizedLine(length: Int) {
    let limit = Int64(service.config.maxLineBytes)
    let data: JSONValue = .object([
      JSONMember("reason", .string("line_too_long")), JSONMember("limit", .int(limit)),
      JSONMember("length", .int(Int64(length))),
    ])
    writeError(RPCError(.parseError, "Parse error", data: data), id: .null)
  }

  /// Answers a Content-Length header the framer could not read: one `-32700`, id null.
  package func handleHeaderFault(_ fault: HeaderFault) {
    let data: JSONValue = .object(
      [JSONMember("reason", .string(fault.reason)), JSONMember("detail", .string(fault.detail))] + fault.facts)
    writeError(RPCError(.parseError, "Parse error", data: data), id: .null)
  }

  // MARK: - Requests

  private func handleBatch(_ members: [Envelope]) {
    if members.isEmpty {
      return writeError(.invalidRequest("an empty batch is not a request"), id: .null)
    }
    if members.count > service.config.maxBatch {
      return writeError(
        .invalidRequest("batch of \(members.count) exceeds --max-batch \(service.config.maxBatch)"), id: .null)
    }
    inBatch = true
    defer { inBatch = false }
    let start = burst.mark
    burst.append(UInt8(ascii: "["))
    var answered = 0
    for member in members {
      let mark = burst.mark
      if answered > 0 { burst.append(UInt8(ascii: ",")) }
      if handle(member) { answered += 1 } else { burst.discard(from: mark) }
    }
    if answered == 0 {
      burst.discard(from: start)
    } else {
      burst.append(UInt8(ascii: "]"))
      burst.append(UInt8(ascii: "\n"))
    }
  }

  /// Handles one request object and appends its response (no newline). Returns false when there is none.
  private func handle(_ value: Envelope) -> Bool {
    switch value {
    case .response:
      service.log.warn("ignored a response object: this server sends no requests")
      return false
    case .invalid(let id, let error):
      burst.countRequest()
      burst.appendError(error, id: id ?? .null)
      return true
    case .request(let request):
      return call(request)
    }
  }

  private func call(_ request: Request) -> Bool {
    let method = table.method(request)
    if method == nil, !service.lifecycle.shutDown, let mcpMethod = MCPTable.standard.method(request) {
      return call(mcpMethod, request)  // a name the wire methods do not have, MCP's
    }
    if method?.commitsFirst == true { commit() }
    let mark = burst.mark
    if request.id != nil { burst.countRequest() }
    do {
      let waiting = try burst.write { draft throws(RPCError) in
        ResponseWriter.beginResult(id: request.id ?? .null, to: &draft)
        return try table.call(method, request, service, into: &draft)
      }
      if case .long(let start)? = waiting {
        burst.discard(from: mark)
        return startLong(start, id: request.id)
      }
      if let waiting, let id = request.id {
        burst.discard(from: mark)
        if case .save(let result) = waiting {
          burst.holdSave(result, id: id)
        } else if case .other(let result) = waiting {
          burst.hold(result, id: id)
        }
        return true
      }
      burst.write { ResponseWriter.endResult(to: &$0) }
    } catch {
      burst.discard(from: mark)
      if request.isNotification {
        service.log.debug("notification \(request.method) failed: \(error.message)")
      } else {
        burst.write { ResponseWriter.append(Response(id: request.id ?? .null, .error(error)), to: &$0) }
      }
      countRefusal(of: request.method, error)
    }
    guard request.id != nil else {
      burst.discard(from: mark)
      return false
    }
    burst.countReply()
    return true
  }

  /// Counts a refused save for `/metrics`.
  func countRefusal(of method: String, _ error: RPCError) {
    if method.hasPrefix("save") { service.counters.countRefusal(MetricCounters.reason(error.code.rawValue)) }
  }

  // MARK: - Writing

  /// Records a save's reply: a hole when it waits for the commit, else its bytes at once.
  func reply(to id: RequestID, _ result: SaveResult) { burst.reply(to: id, result, service) }

  private func writeError(_ error: RPCError, id: RequestID) { burst.writeError(error, id: id) }
}
