/// Runs `PayloadRules.table` over a payload's text: every finding with its rule's code, the JSON
/// path, the exact bytes and, where there is a sure repair, a fix. The one checker behind the LSP
/// server's diagnostics and `parsePayload`'s `diagnostics`.
///
/// A finding is kept only when its code has a row in the table, so each rule has one home.
package struct PayloadCheck {
  package private(set) var findings: [PayloadFinding] = []
  let tree: PayloadTree
  let source: UnsafeBufferPointer<UInt8>

  /// Checks `source`, UTF-8 JSON text; findings in text order.
  package static func check(_ source: [UInt8]) -> (tree: PayloadTree, findings: [PayloadFinding]) {
    source.withUnsafeBufferPointer { check($0) }
  }

  package static func check(_ source: UnsafeBufferPointer<UInt8>) -> (tree: PayloadTree, findings: [PayloadFinding]) {
    let tree = PayloadTree.read(source)
    var check = PayloadCheck(tree: tree, source: source)
    check.run()
    let sorted = check.findings.enumerated().sorted { a, b in
      (a.element.start, a.offset) < (b.element.start, b.offset)
    }.map(\.element)
    return (tree, sorted)
  }

  /// The finding for a document over `limit` bytes, which is not read at all.
  package static func tooLarge(byteCount: Int, limit: Int) -> PayloadFinding {
    PayloadFinding(
      code: "document-too-large", path: "", start: 0, end: 0,
      message: "the document is \(byteCount) bytes; documents over \(limit) bytes are not checked")
  }

  mutating func report(
    _ code: String, _ path: String, _ start: Int, _ end: Int, _ message: String, fix: PayloadFix? = nil
  ) {
    guard PayloadRules.byCode[code] != nil else { return }
    findings.append(PayloadFinding(code: code, path: path, start: start, end: end, message: message, fix: fix))
  }

  mutating func report(_ code: String, _ path: String, _ node: PayloadNode, _ message: String, fix: PayloadFix? = nil) {
    report(code, path, node.start, node.end, message, fix: fix)
  }

  mutating func report(
    _ code: String, _ path: String, key member: PayloadMember, _ message: String, fix: PayloadFix? = nil
  ) {
    report(code, path, member.keyStart, member.keyEnd, message, fix: fix)
  }

  mutating func run() {
    for f in tree.syntax + tree.encoding where PayloadRules.byCode[f.code] != nil { findings.append(f) }
    guard let root = tree.root else { return }
    duplicates(root, path: "")
    guard root.kind == .object else {
      report("not-an-object", "", root, "a push payload is a JSON object, not \(article(root.typeName))")
      return
    }
    size(root)
    aps(root)
    braze(root)
    extras(root)
    crossKeys(root)
  }

  // MARK: - The document

  /// Every object's repeated keys, at any depth (the tree is at most `PayloadReader.maxDepth` deep).
  mutating func duplicates(_ node: PayloadNode, path: String) {
    if node.kind == .object {
      var seen = Set<String>()
      var previous: [String: Int] = [:]
      for (n, m) in node.members.enumerated() {
        let where_ = join(path, m.key)
        if !seen.insert(m.key).inserted {
          let fix = PayloadFix(
            "Remove this copy of \"\(m.key)\"", [.init(start: m.previousEnd, end: m.value.end, text: "")])
          let first = previous[m.key].map { node.members[$0] }
          let line = first.map { " (first at byte \($0.keyStart))" } ?? ""
          report(
            "duplicate-key", where_, m.keyStart, m.keyEnd,
            "\"\(m.key)\" appears more than once in this object\(line); one copy is dropped", fix: fix)
        } else {
          previous[m.key] = n
        }
        duplicates(m.value, path: where_)
      }
    } else if node.kind == .array {
      for (n, e) in node.elements.enumerated() { duplicates(e, path: path + "[\(n)]") }
    }
  }

  mutating func size(_ root: PayloadNode) {
    let bytes = root.compactSize
    let at = (root.start, root.start + 1)
    if bytes > PayloadRules.apnsLimit {
      report(
        "apns-size", "", at.0, at.1,
        "the payload takes \(bytes) bytes as compact UTF-8 JSON; APNs allows \(PayloadRules.apnsLimit)")
    } else if bytes > PayloadRules.brazeComposerLimit {
      report(
        "braze-size", "", at.0, at.1,
        "the payload takes \(bytes) bytes as compact JSON; Braze's composer allows \(PayloadRules.brazeComposerLimit)")
    }
  }

  // MARK: - aps

  static let apsKeys = Set(PayloadRules.keys.filter { $0.parent == "aps" }.map(\.name))
  static let alertKeys = Set(PayloadRules.keys.filter { $0.parent == "aps.alert" }.map(\.name))

  mutating func aps(_ root: PayloadNode) {
    guard let member = root.member("aps") else {
      if tree.complete && root.member("Simulator Target Bundle") != nil {
        report("no-aps", "aps", root.start, root.start + 1, "the payload has no aps dictionary; APNs needs one")
      }
      return
    }
    let aps = member.value
    guard aps.kind == .object else {
      return report("aps-type", "aps", aps, "aps must be a dictionary, not \(article(aps.typeName))")
    }
    for m in aps.members where !(m.key.isASCII && Self.apsKeys.contains(m.key)) {
      report(
        "aps-unknown-key", "aps." + m.key, key: m,
        "\"\(m.key)\" is not one of Apple's aps keys; put custom data outside aps")
    }
    if let alert = aps["alert"] { self.alert(alert) }
    if let badge = aps["badge"], !badge.isInteger {
      var fix: PayloadFix? = nil
      if badge.kind == .string, let n = Int64(badge.text) {
        fix = PayloadFix(
          "Write the badge as the number \(n)", [.init(start: badge.start, end: badge.end, text: String(n))])
      }
      report("badge-type", "aps.badge", badge, "badge must be an integer, not \(article(badge.typeName))", fix: fix)
    }
    if let sound = aps["sound"] { self.sound(sound) }
    one(aps["content-available"], "content-available", "content-available-value")
    one(aps["mutable-content"], "mutable-content", "mutable-content-value")
    for (key, code) in [
      ("category", "category-type"), ("thread-id", "thread-id-type"), ("target-content-id", "target-content-id-type"),
    ] {
      if let v = aps[key], v.kind != .string {
        report(code, "aps." + key, v, "\(key) must be a string, not \(article(v.typeName))")
      }
    }
    if let level = aps["interruption-level"],
      !(level.kind == .string && PayloadRules.interruptionLevels.contains(level.text))
    {
      report(
        "interruption-level-value", "aps.interruption-level", level,
        "interruption-level must be passive, active, time-sensitive or critical, not \(shown(level))")
    }
    if let score = aps["relevance-score"], !(score.number.map { $0 >= 0 && $0 <= 1 } ?? false) {
      report(
        "relevance-score-range", "aps.relevance-score", score,
        "relevance-score must be a number from 0 to 1, not \(shown(score))")
    }
  }

  /// `content-available` and `mutable-content`: the number 1; a fix when the intent is clear.
  mutating func one(_ value: PayloadNode?, _ key: String, _ code: String) {
    guard let value, value.integer != 1 else { return }
    let meant = (value.kind == .string && value.text == "1") || (value.kind == .bool && value.text == "true")
    let fix =
      meant ? PayloadFix("Write \(key) as the number 1", [.init(start: value.start, end: value.end, text: "1")]) : nil
    report(code, "aps." + key, value, "\(key) must be the number 1, not \(shown(value))", fix: fix)
  }

  mutating func alert(_ alert: PayloadNode) {
    if alert.kind == .string { return }
    guard alert.kind == .object else {
      return report(
        "alert-type", "aps.alert", alert, "alert must be a string or a dictionary, not \(article(alert.typeName))")
    }
    for m in alert.members {
      let path = "aps.alert." + m.key
      guard m.key.isASCII && Self.alertKeys.contains(m.key) else {
        report("alert-unknown-key", path, key: m, "\"\(m.key)\" is not one of Apple's alert keys")
        continue
      }
      if m.key.hasSuffix("-args") {
        if m.value.kind != .array || m.value.elements.contains(where: { $0.kind != .string }) {
          report("alert-child-type", path, m.value, "\(m.key) must be an array of strings")
        }
      } else if m.value.kind != .string {
        report("alert-child-type", path, m.value, "\(m.key) must be a string, not \(article(m.value.typeName))")
      }
    }
  }

  mutating func sound(_ sound: PayloadNode) {
    if sound.kind == .string { return }
    guard sound.kind == .object else {
      return report(
        "sound-type", "aps.sound", sound, "sound must be a file name or a dictionary, not \(article(sound.typeName))")
    }
    if let critical = sound["critical"], critical.integer != 1 && critical.integer != 0 {
      report("sound-child", "aps.sound.critical", critical, "critical must be 1 (or 0), not \(shown(critical))")
    }
    if let name = sound["name"], name.kind != .string {
      report("sound-child", "aps.sound.name", name, "name must be a string, not \(article(name.typeName))")
    }
    if let volume = sound["volume"], !(volume.number.map { $0 >= 0 && $0 <= 1 } ?? false) {
      report("sound-child", "aps.sound.volume", volume, "volume must be a number from 0 to 1, not \(shown(volume))")
    }
  }
}

/// `parent.key`, or `key` at the top.
func join(_ parent: String, _ key: String) -> String { parent.isEmpty ? key : parent + "." + key }

/// "an object", "a string".
func article(_ typeName: String) -> String {
  (["a", "e", "i", "o", "u"].contains(typeName.prefix(1)) ? "an " : "a ") + typeName
}

/// A value as it appears in a message: short source-like text.
func shown(_ node: PayloadNode) -> String {
  switch node.kind {
  case .string: return "\"" + PayloadRequire.short(node.text) + "\""
  case .number, .bool, .null: return node.text
  case .object, .array: return article(node.typeName)
  }
}
