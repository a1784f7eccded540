/// The framing of one process's input: newline-delimited, Content-Length headers, or `auto`,
/// which decides once from the first bytes (`Framing.decide`) and keeps that choice. Replies go
/// out in the framing the input used (`Transport.write(lines:framing:)`).
package struct MessageFramer {
  /// `.auto` until the first bytes decided it.
  package private(set) var framing: Framing
  private var lines: LineFramer
  private var headers: HeaderFramer
  /// `auto`: the bytes read before the framing was known.
  private var held: [UInt8] = []

  package init(_ framing: Framing, maxLineBytes: Int) {
    self.framing = framing
    self.lines = LineFramer(maxLineBytes: maxLineBytes)
    self.headers = HeaderFramer(maxLineBytes: maxLineBytes)
  }

  /// True after a fatal header fault: the stream cannot be resynchronised.
  package var isBroken: Bool { headers.isBroken }

  /// Adds bytes and calls `body` for every message they complete.
  package mutating func feed(_ bytes: UnsafeBufferPointer<UInt8>, _ body: (FramedLine) -> Void) {
    switch framing {
    case .newline: lines.feed(bytes, body)
    case .contentLength: headers.feed(bytes, body)
    case .auto:
      held.append(contentsOf: bytes)
      guard let decided = Framing.decide(held, ended: false) else {
        if Framing.leadingBlank(held) == held.count { held = [] }  // blanks mean nothing in either framing
        return
      }
      start(decided, body)
    }
  }

  package mutating func feed(_ bytes: [UInt8], _ body: (FramedLine) -> Void) {
    bytes.withUnsafeBufferPointer { feed($0, body) }
  }

  /// End of input.
  package mutating func finish(_ body: (FramedLine) -> Void) {
    if framing == .auto { start(Framing.decide(held, ended: true) ?? .newline, body) }
    switch framing {
    case .contentLength: headers.finish(body)
    default: lines.finish(body)
    }
  }

  /// Fixes the framing and frames what was held. Header framing skips the BOM and blank bytes before
  /// the first header; the line framer drops them itself.
  private mutating func start(_ decided: Framing, _ body: (FramedLine) -> Void) {
    framing = decided
    let bytes = held
    held = []
    if decided == .contentLength {
      headers.feed(Array(bytes[Framing.leadingBlank(bytes)...]), body)
    } else {
      lines.feed(bytes, body)
    }
  }
}

extension Framing {
  /// Header names that may open a Content-Length stream (lowercase, with the colon).
  private static let openers = [Array("content-length:".utf8), Array("content-type:".utf8)]

  /// The framing the first bytes of input show, or nil while they cannot tell yet. After an optional
  /// BOM and blanks, `{`, `[` or anything but a header name means newline; `Content-Length:` or
  /// `Content-Type:` (any case) means header framing. `ended`: no more bytes will come.
  package static func decide(_ bytes: [UInt8], ended: Bool) -> Framing? {
    if !ended && bytes.count < 3 && [0xEF, 0xBB, 0xBF].starts(with: bytes) { return nil }  // a BOM cut short
    let start = leadingBlank(bytes)
    guard start < bytes.count else { return ended ? .newline : nil }
    let rest = bytes[start...].prefix(16).map { $0 | (($0 >= 0x41 && $0 <= 0x5A) ? 0x20 : 0) }
    for opener in openers where rest.starts(with: opener.prefix(rest.count)) {
      if rest.count >= opener.count { return .contentLength }
      return ended ? .newline : nil
    }
    return .newline
  }

  /// The index after a leading UTF-8 BOM and blanks (space, tab, `\r`, `\n`).
  static func leadingBlank(_ bytes: [UInt8]) -> Int {
    var i = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
    while i < bytes.count && [0x20, 0x09, 0x0D, 0x0A].contains(bytes[i]) { i += 1 }
    return i
  }
}
