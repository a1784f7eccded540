/// A plain model of the LSP base protocol as push-outbox reads it (Protocol/README.md, "Content-Length
/// framing"), written apart from `HeaderFramer`: the whole stream at once, header lines up to an empty
/// one, then exactly `Content-Length` bytes.
enum HeaderModel {
  enum Message {
    case body(ArraySlice<UInt8>)
    /// One `-32700` with id null: a refused charset, a body over the limit, a header fault, a cut message.
    case error
  }

  static let maxHeaderBytes = 8192
  private static let token = Set(
    Array("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8))

  static func messages(_ input: [UInt8], maxBody: Int) -> [Message] {
    var out: [Message] = []
    var i = 0
    while i < input.count {
      var length: Int? = nil
      var refused = false
      var headerBytes = 0
      while true {
        let newline = input[i...].firstIndex(of: 0x0A)
        if headerBytes + ((newline ?? input.count) - i) > maxHeaderBytes { return out + [.error] }
        guard let newline else { return out + [.error] }  // cut inside the header
        let line = input[i..<newline]
        headerBytes += line.count + 1
        i = newline + 1
        guard line.last == 0x0D else { return out + [.error] }
        let text = line.dropLast()
        if text.isEmpty { break }
        guard let colon = text.firstIndex(of: 0x3A), colon > text.startIndex, text[..<colon].allSatisfy(token.contains)
        else { return out + [.error] }
        let name = String(decoding: text[..<colon], as: UTF8.self).lowercased()
        let value = trim(text[(colon + 1)...])
        if name == "content-length" {
          guard length == nil, (1...18).contains(value.count), value.allSatisfy({ (0x30...0x39).contains($0) }) else {
            return out + [.error]
          }
          length = Int(String(decoding: value, as: UTF8.self))
        } else if name == "content-type", let charset = charset(value) {
          refused = charset != "utf-8" && charset != "utf8"
        }
      }
      guard let length else { return out + [.error] }
      guard input.count - i >= length else { return out + [.error] }  // cut inside the body
      out.append(refused || length > maxBody ? .error : .body(input[i..<(i + length)]))
      i += length
    }
    return out
  }

  private static func trim(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    var b = bytes
    while let f = b.first, f == 0x20 || f == 0x09 { b = b.dropFirst() }
    while let l = b.last, l == 0x20 || l == 0x09 { b = b.dropLast() }
    return b
  }

  /// The lowercased, unquoted `charset` parameter of a Content-Type value, if any.
  private static func charset(_ value: ArraySlice<UInt8>) -> String? {
    let lower = value.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }
    for part in lower.split(separator: 0x3B, omittingEmptySubsequences: false).dropFirst() {
      guard let eq = part.firstIndex(of: 0x3D), trim(part[..<eq]).elementsEqual("charset".utf8) else { continue }
      var name = trim(part[(eq + 1)...])
      if name.count >= 2, name.first == 0x22, name.last == 0x22 { name = name.dropFirst().dropLast() }
      return String(decoding: name, as: UTF8.self)
    }
    return nil
  }
}
