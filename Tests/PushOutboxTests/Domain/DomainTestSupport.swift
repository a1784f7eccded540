@testable import OutboxCommandLine
@testable import OutboxDelivery
@testable import OutboxDomain
@testable import OutboxJSON
@testable import OutboxJSONRPC
@testable import OutboxServer
@testable import OutboxStore
@testable import OutboxSupport
@testable import OutboxTransport

/// Helpers for the domain-rule tests, namespaced so they cannot clash with other test files.
enum DomainFixture {
  /// Parses JSON text written in a test.
  static func json(_ text: String) -> JSONValue {
    do {
      return try JSONReader.parse(Array(text.utf8))
    } catch {
      fatalError("bad test JSON \(text): \(error)")
    }
  }

  /// The members of a JSON object written in a test.
  static func members(_ text: String) -> [JSONMember] {
    guard case .object(let members) = json(text) else { fatalError("not an object: \(text)") }
    return members
  }

  /// A string of `count` copies of `unit`.
  static func repeated(_ unit: String, _ count: Int) -> String {
    String(repeating: unit, count: count)
  }

  /// Limits with one change.
  static func limits(strings: StringPolicy = .reject, arrayLimit: Int = 25) -> DomainLimits {
    var limits = DomainLimits()
    limits.strings = strings
    limits.arrayLimit = arrayLimit
    return limits
  }
}

extension Issues {
  /// `code@path` for every error, in order.
  var errorList: [String] { errors.map { "\($0.code)@\($0.path)" } }
  /// `code@path` for every warning, in order.
  var warningList: [String] { warnings.map { "\($0.code)@\($0.path)" } }
}
