import Foundation
import Testing

/// Dependencies point one way: Methods → Store → Support. The store knows nothing of the server,
/// the methods, the transport or Braze's domain rules; Support knows nothing of the store.
@Suite struct LayeringTests {
  private static let sources = Paths.root.appendingPathComponent("Sources/PushOutbox")

  /// Swift files under a layer folder (recursively).
  private static func files(_ layer: String) -> [URL] {
    let root = sources.appendingPathComponent(layer)
    let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
    return (walker?.allObjects as? [URL] ?? []).filter { $0.pathExtension == "swift" }
  }

  /// Type names a layer declares.
  private static func declaredTypes(_ layer: String) throws -> Set<String> {
    let pattern = try NSRegularExpression(pattern: #"(?:struct|enum|class|protocol|typealias)\s+([A-Z][A-Za-z0-9]*)"#)
    var names = Set<String>()
    for file in files(layer) {
      let text = try String(contentsOf: file, encoding: .utf8)
      for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
        names.insert(String(text[Range(match.range(at: 1), in: text)!]))
      }
    }
    return names
  }

  /// Code identifiers of a file, comments and string literals left out.
  private static func identifiers(_ file: URL) throws -> Set<String> {
    let raw = try String(contentsOf: file, encoding: .utf8)
    let literal = try NSRegularExpression(pattern: #""(?:[^"\\\n]|\\.)*""#)
    let text = literal.stringByReplacingMatches(
      in: raw, range: NSRange(raw.startIndex..., in: raw), withTemplate: "\"\"")
    let code = text.split(separator: "\n").map { line -> Substring in
      guard let comment = line.range(of: "//") else { return line }
      return line[..<comment.lowerBound]
    }.joined(separator: "\n")
    let words = code.split { !($0.isLetter || $0.isNumber || $0 == "_") }
    return Set(words.map(String.init))
  }

  private func violations(in lower: [String], using upper: [String]) throws -> [String] {
    var forbidden = Set<String>()
    for layer in upper { forbidden.formUnion(try Self.declaredTypes(layer)) }
    for layer in lower { forbidden.subtract(try Self.declaredTypes(layer)) }
    var found: [String] = []
    for layer in lower {
      for file in Self.files(layer) {
        let used = try Self.identifiers(file).intersection(forbidden)
        if !used.isEmpty { found.append("\(layer)/\(file.lastPathComponent): \(used.sorted())") }
      }
    }
    return found.sorted()
  }

  @Test func theStoreDependsOnNothingAboveIt() throws {
    #expect(try !Self.declaredTypes("Server").isEmpty && !Self.declaredTypes("Methods").isEmpty)
    let found = try violations(in: ["Store"], using: ["Server", "Methods", "Transport", "Domain", "Delivery"])
    #expect(found == [], "\(found)")
  }

  @Test func supportDependsOnNoOtherLayer() throws {
    let found = try violations(
      in: ["Support"], using: ["Store", "Server", "Methods", "Transport", "Domain", "JSONRPC", "Delivery"])
    #expect(found == [], "\(found)")
  }

  /// Delivery sits between the methods and the store: Methods → Delivery → Store → Support.
  @Test func deliveryDependsOnNothingAboveIt() throws {
    let found = try violations(in: ["Delivery"], using: ["Server", "Methods", "Transport"])
    #expect(found == [], "\(found)")
  }
}
