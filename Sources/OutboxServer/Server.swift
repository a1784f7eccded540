import OutboxDelivery
import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxStore
import OutboxSupport
package import OutboxTransport

/// Turns request lines into response lines, strictly in order.
///
/// Replies wait until the journal commit's outcome is known: a save's reply is written into `draft`
/// and marked as a hole (`Hole`), and `render()` (called between lines, once per burst) commits what
/// is still pending and writes every reply into `output`, as written or as `-32003` in its place.
/// Nothing written into `output` is ever patched afterwards. Every request with an id gets exactly one reply;
/// notifications get none, ever. A long call (`LongCalls`) is answered when its work ends, with a
/// later burst: the only replies that may follow replies to later requests.
package final class Server {
  package let service: Service
  package let table: MethodTable
  /// Response bytes ready to write: whole lines, each ending in `\n`.
  package var output: [UInt8] = []
  /// This burst's response bytes, without the replies that wait for a commit.
  var draft: [UInt8] = []
  /// Replies waiting for a commit, in order, each at its offset in `draft`.
  var holes: [Hole] = []
  /// What this burst's commits decided for `holes`.
  var settlement = Settlement()
  /// Requests with an id seen and replies rendered, in this burst (see `render`).
  var ledger = ReplyLedger()
  /// A batch's members are being handled: a long call among them runs to its end in place.
  var inBatch = false
  /// False to send every line through the general path (for tests that compare the two).
  package var fastSaves: Bool
  /// What an MCP client's `initialize` settled, for the handshake era (`MCP/`).
  var mcp = MCPSession()
  /// The fast save's node memory and item bytes, reused from one line to the next.
  let fastTape = TapeScratch()
  let fastLimits: FastSave.Limits
  var fastBody: [UInt8] = []
  /// The user hashes of a prepared batch's saves, read ahead before they are stored (`answerPostedBatch`).
  var warmHashes: [UInt32] = []
  /// The second thread that prepares fast saves (`Server+Batch.swift`), with `--threads 2`.
  /// Saves the second thread prepared and this one stored (for tests).
  var preparedSaves = 0
  /// The last batch posted to the second thread, not yet answered (`Server+Batch.swift`).
  var postedBatch: PostedBatch?
  lazy var linePreparer: LinePreparer? = service.config.threads > 1 ? LinePreparer(config: service.config) : nil

  /// How many of `holes` are saves whose replies are already in `draft`.
  var writtenHoles = 0

  /// About how many reply bytes the burst holds so far (replies not yet written counted at a
  /// typical size).
  var burstBytes: Int { draft.count + (holes.count - writtenHoles) * 96 }

  package init(service: Service, table: MethodTable = .standard) {
    self.service = service
    self.table = table
    self.fastSaves = table.names.contains(SaveCustomEvent.name)
    self.fastLimits = FastSave.Limits(service.config)
    output.reserveCapacity(1 << 16)
    draft.reserveCapacity(1 << 16)
  }

  /// Handles one line (without its `\n`, `\r` or BOM): a request, a notification or a batch.
  package func handle(line: UnsafeBufferPointer<UInt8>) {
    if fastSaves && !service.lifecycle.shutDown && handleFastSave(line) { return }
    handleGeneral(line: line)
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
      let mark = draft.count
      if handle(value) {
        draft.append(UInt8(ascii: "\n"))
      } else {
        draft.removeSubrange(mark...)
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
    let start = draft.count
    draft.append(UInt8(ascii: "["))
    var answered = 0
    for member in members {
      let mark = draft.count
      if answered > 0 { draft.append(UInt8(ascii: ",")) }
      if handle(member) { answered += 1 } else { draft.removeSubrange(mark...) }
    }
    if answered == 0 {
      draft.removeSubrange(start...)
    } else {
      draft.append(contentsOf: [UInt8(ascii: "]"), UInt8(ascii: "\n")])
    }
  }

  /// Handles one request object and appends its response (no newline). Returns false when there is none.
  private func handle(_ value: Envelope) -> Bool {
    switch value {
    case .response:
      service.log.warn("ignored a response object: this server sends no requests")
      return false
    case .invalid(let id, let error):
      ledger.requested += 1
      appendError(error, id: id ?? .null)
      return true
    case .request(let request):
      return call(request)
    }
  }

  private func call(_ request: Request) -> Bool {
    if table.commitsFirst(request.method) { commit() }
    let mark = draft.count
    if request.id != nil { ledger.requested += 1 }
    ResponseWriter.beginResult(id: request.id ?? .null, to: &draft)
    do {
      let waiting = try table.call(request, service, into: &draft)
      if case .long(let start)? = waiting {
        draft.removeSubrange(mark...)
        return startLong(start, id: request.id)
      }
      if let waiting, let id = request.id {
        draft.removeSubrange(mark...)
        if case .save(let result) = waiting {
          holdSave(result, id: id)
        } else if case .other(let result) = waiting {
          holes.append(Hole(offset: draft.count, id: id, reply: .other(result)))
        }
        return true
      }
      ResponseWriter.endResult(to: &draft)
    } catch let error where error.code == .methodNotFound && MCPTable.standard.serves(request) {
      draft.removeSubrange(mark...)
      if let long = answerMCP(request) { return startLong(long, id: request.id) }
    } catch {
      draft.removeSubrange(mark...)
      if request.isNotification {
        service.log.debug("notification \(request.method) failed: \(error.message)")
      } else {
        ResponseWriter.append(Response(id: request.id ?? .null, .error(error)), to: &draft)
      }
      countRefusal(of: request.method, error)
    }
    guard request.id != nil else {
      draft.removeSubrange(mark...)
      return false
    }
    ledger.rendered += 1
    return true
  }

  /// Counts a refused save for `/metrics`.
  func countRefusal(of method: String, _ error: RPCError) {
    if method.hasPrefix("save") { service.counters.countRefusal(MetricCounters.reason(error.code.rawValue)) }
  }

  // MARK: - Writing

  /// Records a save's reply: a hole when it waits for the commit, else its bytes at once.
  func reply(to id: RequestID, _ result: SaveResult) {
    ledger.requested += 1
    if result.awaitsCommit {
      holdSave(result, id: id)
    } else {
      if !result.receipt.duplicate { service.counters.countSave(result.kind) }
      Server.appendReply(result, id: id, to: &draft)
      ledger.rendered += 1
    }
    draft.append(UInt8(ascii: "\n"))
  }

  private func appendError(_ error: RPCError, id: RequestID) {
    ResponseWriter.append(Response(id: id, .error(error)), to: &draft)
    ledger.rendered += 1
  }

  private func writeError(_ error: RPCError, id: RequestID) {
    ledger.requested += 1
    appendError(error, id: id)
    draft.append(UInt8(ascii: "\n"))
  }
}
