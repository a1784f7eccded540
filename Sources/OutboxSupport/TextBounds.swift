extension String {
  /// At most `limit` UTF-8 bytes of this string, cut on a character boundary (never inside one).
  package func prefix(utf8Bytes limit: Int) -> String {
    guard utf8.count > limit else { return self }
    var end = startIndex
    var used = 0
    for index in indices {
      let next = self.index(after: index)
      let size = self[index..<next].utf8.count
      if used + size > limit { break }
      used += size
      end = next
    }
    return String(self[..<end])
  }

  /// Control characters (C0, DEL, C1) written as `\n`, `\r`, `\t` or `\u{…}`, so text from outside
  /// cannot forge a log line or drive a terminal.
  package var escapingControlCharacters: String {
    guard unicodeScalars.contains(where: \.isControl) else { return self }
    var out = ""
    for scalar in unicodeScalars {
      switch scalar {
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case _ where scalar.isControl: out += "\\u{" + String(scalar.value, radix: 16) + "}"
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out
  }
}

extension Unicode.Scalar {
  fileprivate var isControl: Bool { value < 0x20 || (0x7F...0x9F).contains(value) }
}
