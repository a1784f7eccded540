/// Turns request lines into response lines, strictly in order, into one output buffer.
///
/// The transport feeds it complete lines and writes `output` when the input burst is done.
/// Every request with an id gets exactly one response; notifications get none, ever.
package final class Server {
  package let service: Service
  package let table: MethodTable
  /// Response bytes not yet written: whole lines, each ending in `\n`.
  package var output: [UInt8] = []
  /// False to send every line through the general path (for tests that compare the two).
  package var fastSaves: Bool

  package init(service: Service, table: MethodTable = .standard) {
    self.service = service
    self.table = table
    self.fastSaves = table.names.contains(SaveCustomEvent.name)
    output.reserveCapacity(1 << 16)
  }

  /// Handles one line (without its `\n`, `\r` or BOM): a request, a notification or a batch.
  package func handle(line: UnsafeBufferPointer<UInt8>) {
    if fastSaves && handleFastSave(line) { return }
    let value: RequestLine
    do {
      value = try RequestLine.read(line, maxDepth: service.config.maxDepth, maxBatch: service.config.maxBatch)
    } catch {
      writeError(error, id: .null)
      return
    }
    if case .batch(let members) = value {
      handleBatch(members)
    } else if case .single(let value) = value {
      let mark = output.count
      if handle(value) { output.append(UInt8(ascii: "\n")) } else {
        output.removeSubrange(mark...)
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

  // MARK: - Requests

  private func handleBatch(_ members: [Envelope]) {
    if members.isEmpty {
      return writeError(.invalidRequest("an empty batch is not a request"), id: .null)
    }
    if members.count > service.config.maxBatch {
      return writeError(.invalidRequest("batch of \(members.count) exceeds --max-batch \(service.config.maxBatch)"), id: .null)
    }
    let start = output.count
    output.append(UInt8(ascii: "["))
    var answered = 0
    for member in members {
      let mark = output.count
      if answered > 0 { output.append(UInt8(ascii: ",")) }
      if handle(member) { answered += 1 } else { output.removeSubrange(mark...) }
    }
    if answered == 0 {
      output.removeSubrange(start...)
    } else {
      output.append(contentsOf: [UInt8(ascii: "]"), UInt8(ascii: "\n")])
    }
  }

  /// Handles one request object and appends its response (no newline). Returns false when there is none.
  private func handle(_ value: Envelope) -> Bool {
    switch value {
    case .response:
      service.log.warn("ignored a response object: this server sends no requests")
      return false
    case .invalid(let id, let error):
      appendError(error, id: id ?? .null)
      return true
    case .request(let request):
      return call(request)
    }
  }

  private func call(_ request: Request) -> Bool {
    if table.commitsFirst(request.method) { commit() }
    let mark = output.count
    let saves = service.uncommitted.count
    appendPrefix(id: request.id ?? .null)
    do {
      try table.call(request, service, into: &output)
      output.append(UInt8(ascii: "}"))
      if service.uncommitted.count > saves, let id = request.id {
        service.uncommitted[saves].response = mark..<output.count
        service.uncommitted[saves].id = id
      }
    } catch {
      output.removeSubrange(mark...)
      if request.isNotification {
        service.log.debug("notification \(request.method) failed: \(error.message)")
      } else {
        appendError(error, id: request.id ?? .null)
      }
    }
    guard request.id != nil else {
      output.removeSubrange(mark...)
      return false
    }
    return true
  }

  // MARK: - Writing

  private func appendPrefix(id: RequestID) {
    output.appendASCII("{\"jsonrpc\":\"2.0\",\"id\":")
    id.encodeJSON(into: &output)
    output.appendASCII(",\"result\":")
  }

  private func appendError(_ error: RPCError, id: RequestID) {
    Server.appendError(error, id: id, to: &output)
  }

  package static func appendError(_ error: RPCError, id: RequestID, to out: inout [UInt8]) {
    out.appendASCII("{\"jsonrpc\":\"2.0\",\"id\":")
    id.encodeJSON(into: &out)
    out.appendASCII(",\"error\":")
    error.encodeJSON(into: &out)
    out.append(UInt8(ascii: "}"))
  }

  private func writeError(_ error: RPCError, id: RequestID) {
    appendError(error, id: id)
    output.append(UInt8(ascii: "\n"))
  }
}
