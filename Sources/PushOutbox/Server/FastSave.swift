/// The fast path for the hot request: a common `saveCustomEvent` line (see `SaveEventScanner`) is
/// answered straight from its bytes, without a `JSONValue` tree, `Params` or re-encoding.
///
/// It makes exactly the calls the general path makes (clock, id, admit, seq, store, journal) and
/// writes the same bytes; `FastSaveTests` compares the two. Whatever it does not recognize, and a
/// save the store would refuse, it leaves untouched for the general path.
extension Server {
  /// Answers `line` and returns true, or changes nothing and returns false.
  func handleFastSave(_ line: UnsafeBufferPointer<UInt8>) -> Bool {
    let service = self.service
    let config = service.config
    guard
      let scan = SaveEventScanner.scan(
        line, maxDepth: config.maxDepth, maxPropertiesBytes: config.domain.maxPropertiesBytes),
      let base = line.baseAddress
    else { return false }
    let body = FastSave.body(base, scan, time: service.clock.now(), text: &timeText)
    // A refused save also takes an id first; leave it all to the general path.
    guard (try? service.store.admit(itemBytes: body.count + IDGenerator.length + PendingItem.overhead)) != nil else {
      return false
    }
    let saves = service.uncommitted.count
    let result: SaveResult
    do {
      result = try service.save(kind: .customEvent, clientID: nil, user: nil, attribute: nil, body: body, warnings: [])
    } catch {
      preconditionFailure("the store admitted this item a moment ago: \(error)")
    }
    let id = UnsafeBufferPointer(rebasing: line[scan.id])
    let mark = output.count
    FastSave.appendResponse(id: id, result, to: &output)
    if service.uncommitted.count > saves {
      service.uncommitted[saves].response = mark..<(output.count - 1)
      service.uncommitted[saves].id = FastSave.requestID(id)
    }
    return true
  }
}

enum FastSave {
  /// `,"name":"…","properties":{…},"time":"…"`, as `SaveCustomEvent` builds it.
  static func body(
    _ base: UnsafePointer<UInt8>, _ scan: SaveEventScan, time: Int64, text: inout UTCTimeText
  ) -> [UInt8] {
    let properties = scan.properties ?? 0..<0
    let size = 9 + scan.name.count + 15 + max(2, properties.count) + 9 + UTCTimeText.length + 1
    var body: [UInt8] = []
    ByteCursor.append(to: &body, capacity: size) { out in
      out.put(",\"name\":\"")
      out.put(base + scan.name.lowerBound, scan.name.count)
      out.put("\",\"properties\":")
      if properties.isEmpty { out.put("{}") } else { out.put(base + properties.lowerBound, properties.count) }
      out.put(",\"time\":\"")
      text.write(ms: time, to: out.p)
      out.advance(by: UTCTimeText.length)
      out.put(UInt8(ascii: "\""))
    }
    return body
  }

  /// The response line, newline included, as `Server.call` and `SaveResult` write it.
  static func appendResponse(id: UnsafeBufferPointer<UInt8>, _ result: SaveResult, to output: inout [UInt8]) {
    var itemID = result.id
    itemID.withUTF8 { itemID in
      ByteCursor.append(to: &output, capacity: id.count + itemID.count + 128) { out in
        out.put("{\"jsonrpc\":\"2.0\",\"id\":")
        out.put(id)
        out.put(",\"result\":{\"id\":\"")
        out.put(itemID)
        out.put("\",\"seq\":")
        out.put(decimal: result.seq)
        out.put(",\"pending\":")
        out.put(decimal: UInt64(result.pending))
        out.put("}}\n")
      }
    }
  }

  /// The request id of an `id` token the scanner accepted.
  static func requestID(_ token: UnsafeBufferPointer<UInt8>) -> RequestID {
    var reader = JSONReader(token)
    guard let value = try? reader.parseDocument() else { return .null }
    return RequestID(value) ?? .null
  }
}
