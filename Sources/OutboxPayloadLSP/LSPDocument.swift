package import OutboxDomain

/// How LSP positions count characters within a line (`positionEncoding`, LSP 3.17).
package enum PositionEncoding: String, Sendable {
  case utf16 = "utf-16"
  case utf8 = "utf-8"
}

/// A line and a character offset in the negotiated encoding.
package struct Position: Sendable, Equatable {
  package var line: Int
  package var character: Int

  package init(line: Int, character: Int) {
    self.line = line
    self.character = character
  }
}

/// One open text document: its UTF-8 bytes, where its lines start, and its checked form, kept until
/// the next change.
package struct LSPDocument {
  package var uri: String
  package var languageId: String
  package var version: Int64
  package private(set) var text: [UInt8]
  private(set) var lineStarts: [Int] = [0]
  /// The check of this version (computed on first use).
  private var cached: (tree: PayloadTree, findings: [PayloadFinding])?

  package init(uri: String, languageId: String, version: Int64, text: [UInt8]) {
    self.uri = uri
    self.languageId = languageId
    self.version = version
    self.text = text
    index()
  }

  package mutating func replaceAll(_ bytes: [UInt8]) {
    text = bytes
    index()
  }

  /// Replaces the bytes between two positions (an incremental change).
  package mutating func replace(
    from start: Position, to end: Position, with bytes: [UInt8], _ encoding: PositionEncoding
  ) {
    let a = offset(start, encoding)
    let b = Swift.max(a, offset(end, encoding))
    text.replaceSubrange(a..<b, with: bytes)
    index()
  }

  private mutating func index() {
    cached = nil
    lineStarts = [0]
    var i = 0
    let n = text.count
    text.withUnsafeBufferPointer { t in
      while i < n {
        let b = t[i]
        i += 1
        if b == 0x0A || (b == 0x0D && (i >= n || t[i] != 0x0A)) { lineStarts.append(i) }
      }
    }
  }

  /// The document checked against the rule table, at most `limit` bytes (over it: one finding).
  package mutating func check(limit: Int) -> (tree: PayloadTree, findings: [PayloadFinding]) {
    if let cached { return cached }
    let result =
      text.count > limit
      ? (PayloadTree(), [PayloadCheck.tooLarge(byteCount: text.count, limit: limit)]) : PayloadCheck.check(text)
    cached = result
    return result
  }

  // MARK: - Positions

  /// The end of line `line`'s text, before its line break.
  private func lineEnd(_ line: Int) -> Int {
    var end = line + 1 < lineStarts.count ? lineStarts[line + 1] : text.count
    if end > lineStarts[line], text[end - 1] == 0x0A { end -= 1 }
    if end > lineStarts[line], text[end - 1] == 0x0D { end -= 1 }
    return end
  }

  /// The byte offset of `position`: past the line's end is its end, past the last line the text's end,
  /// inside a character (half a surrogate pair, a UTF-8 continuation) that character's start.
  package func offset(_ position: Position, _ encoding: PositionEncoding) -> Int {
    guard position.line >= 0 else { return 0 }
    guard position.line < lineStarts.count else { return text.count }
    let start = lineStarts[position.line]
    let end = lineEnd(position.line)
    var i = start
    var units = 0
    let wanted = Swift.max(0, position.character)
    while i < end && units < wanted {
      let length = Self.scalarLength(text[i])
      let width = encoding == .utf8 ? length : (length == 4 ? 2 : 1)
      if units + width > wanted { break }
      units += width
      i = Swift.min(i + length, end)
    }
    return i
  }

  /// The position of byte `offset` (clamped to the text).
  package func position(_ offset: Int, _ encoding: PositionEncoding) -> Position {
    let offset = Swift.min(Swift.max(0, offset), text.count)
    var low = 0
    var high = lineStarts.count - 1
    while low < high {
      let mid = (low + high + 1) / 2
      if lineStarts[mid] <= offset { low = mid } else { high = mid - 1 }
    }
    let start = lineStarts[low]
    if encoding == .utf8 { return Position(line: low, character: offset - start) }
    var units = 0
    var i = start
    while i < offset {
      let length = Self.scalarLength(text[i])
      units += length == 4 ? 2 : 1
      i += length
    }
    return Position(line: low, character: units)
  }

  /// Bytes in the UTF-8 sequence a lead byte starts (1 for a stray continuation byte).
  static func scalarLength(_ lead: UInt8) -> Int {
    lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
  }
}
