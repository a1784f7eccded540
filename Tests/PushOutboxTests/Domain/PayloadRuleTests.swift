import Foundation
import Testing

@testable import OutboxDomain
@testable import OutboxJSON

/// One case per rule of `PayloadRules.table`, from the domain facts (`/work/shared/reference/domain.md`
/// §2.1 and the pages each rule cites): a payload that breaks the rule, with `⟦…⟧` around the exact
/// bytes the finding must cover, and the same payload put right, which must not get it.
/// In `bad`, `¤` stands for the byte 0xFF (not UTF-8) and `«N»` for N letters x.
struct PayloadRuleCase: Sendable, CustomTestStringConvertible {
  var code: String
  var fact: String
  var bad: String
  var good: String

  var testDescription: String { code }

  /// The document's bytes and the marked range.
  static func document(_ marked: String) -> (bytes: [UInt8], range: Range<Int>?) {
    var text = marked
    while let open = text.range(of: "«"), let close = text.range(of: "»", range: open.upperBound..<text.endIndex) {
      let n = Int(text[open.upperBound..<close.lowerBound])!
      text.replaceSubrange(open.lowerBound..<close.upperBound, with: String(repeating: "x", count: n))
    }
    var bytes: [UInt8] = []
    var start: Int? = nil
    var end: Int? = nil
    for scalar in text.unicodeScalars {
      switch scalar {
      case "⟦": start = bytes.count
      case "⟧": end = bytes.count
      case "¤": bytes.append(0xFF)
      default: bytes += Array(String(scalar).utf8)
      }
    }
    return (bytes, start.flatMap { s in end.map { s..<$0 } })
  }
}

@Suite("PayloadRules")
struct PayloadRuleTests {
  static let cases: [PayloadRuleCase] = [
    .init(
      code: "json-syntax", fact: "RFC 8259: a member is name, ':', value", bad: #"{"aps": {"badge" ⟦1⟧}}"#,
      good: #"{"aps": {"badge": 1}}"#),
    .init(
      code: "invalid-utf8", fact: "RFC 8259 §8.1: JSON text is UTF-8", bad: #"{"aps": {"alert": "a⟦¤⟧b"}}"#,
      good: #"{"aps": {"alert": "ab"}}"#),
    .init(
      code: "lone-surrogate", fact: "RFC 8259 §8.2: an unpaired surrogate is not Unicode text",
      bad: #"{"aps": {"alert": "a⟦\ud800⟧b"}}"#, good: #"{"aps": {"alert": "a\ud83d\ude00b"}}"#),
    .init(
      code: "duplicate-key", fact: "RFC 8259 §4: names within an object SHOULD be unique",
      bad: #"{"aps": {"badge": 1, ⟦"badge"⟧: 2}}"#, good: #"{"aps": {"badge": 1}}"#),
    .init(
      code: "not-an-object", fact: "Apple: the payload is a JSON dictionary", bad: #"⟦[1]⟧"#, good: #"{"aps": {}}"#),
    .init(
      code: "apns-size", fact: "key_value_pairs.md: APNs payloads cannot exceed 4096 bytes",
      bad: #"⟦{⟧"aps": {"alert": "«4100»"}}"#, good: #"{"aps": {"alert": "«1800»"}}"#),
    .init(
      code: "braze-size", fact: "apple_object.md: alert, extra and options should not exceed 1912 bytes",
      bad: #"⟦{⟧"aps": {"alert": "«2000»"}}"#, good: #"{"aps": {"alert": "«1800»"}}"#),
    .init(
      code: "no-aps", fact: "Apple: the aps dictionary carries the notification",
      bad: #"⟦{⟧"Simulator Target Bundle": "com.example.app"}"#,
      good: #"{"aps": {}, "Simulator Target Bundle": "com.example.app"}"#),
    .init(code: "aps-type", fact: "Apple: aps is a dictionary", bad: #"{"aps": ⟦"hi"⟧}"#, good: #"{"aps": {}}"#),
    .init(
      code: "aps-unknown-key", fact: "Apple: custom keys go outside aps", bad: #"{"aps": {⟦"item_id"⟧: 3}}"#,
      good: #"{"aps": {}, "item_id": 3}"#),
    .init(
      code: "alert-type", fact: "Apple: alert is a string or a dictionary", bad: #"{"aps": {"alert": ⟦3⟧}}"#,
      good: #"{"aps": {"alert": "3"}}"#),
    .init(
      code: "alert-child-type", fact: "Apple: title is a string", bad: #"{"aps": {"alert": {"title": ⟦1⟧}}}"#,
      good: #"{"aps": {"alert": {"title": "1"}}}"#),
    .init(
      code: "alert-unknown-key", fact: "Apple: alert's keys are title, subtitle, body, loc keys",
      bad: #"{"aps": {"alert": {⟦"titel"⟧: "x"}}}"#, good: #"{"aps": {"alert": {"title": "x"}}}"#),
    .init(
      code: "badge-type", fact: "Apple: badge is a number", bad: #"{"aps": {"badge": ⟦"3"⟧}}"#,
      good: #"{"aps": {"badge": 3}}"#),
    .init(
      code: "sound-type", fact: "Apple: sound is a string or a dictionary", bad: #"{"aps": {"sound": ⟦1⟧}}"#,
      good: #"{"aps": {"sound": "default"}}"#),
    .init(
      code: "sound-child", fact: "Apple: volume is 0.0 to 1.0",
      bad: #"{"aps": {"sound": {"critical": 1, "name": "a.caf", "volume": ⟦2⟧}}}"#,
      good: #"{"aps": {"sound": {"critical": 1, "name": "a.caf", "volume": 0.5}}}"#),
    .init(
      code: "content-available-value", fact: "Apple: content-available with a value of 1",
      bad: #"{"aps": {"content-available": ⟦"1"⟧}}"#, good: #"{"aps": {"content-available": 1}}"#),
    .init(
      code: "mutable-content-value", fact: "apple_object.md: mutable_content sets mutable-content to 1",
      bad: #"{"aps": {"mutable-content": ⟦true⟧}}"#, good: #"{"aps": {"mutable-content": 1}}"#),
    .init(
      code: "category-type", fact: "Apple: category is a string", bad: #"{"aps": {"category": ⟦1⟧}}"#,
      good: #"{"aps": {"category": "lab_register"}}"#),
    .init(
      code: "thread-id-type", fact: "Apple: thread-id is a string", bad: #"{"aps": {"thread-id": ⟦[]⟧}}"#,
      good: #"{"aps": {"thread-id": "t1"}}"#),
    .init(
      code: "interruption-level-value", fact: "Apple: passive, active, time-sensitive, critical",
      bad: #"{"aps": {"interruption-level": ⟦"urgent"⟧}}"#, good: #"{"aps": {"interruption-level": "time-sensitive"}}"#),
    .init(
      code: "relevance-score-range", fact: "Apple: relevance-score between 0 and 1",
      bad: #"{"aps": {"relevance-score": ⟦1.5⟧}}"#, good: #"{"aps": {"relevance-score": 0.75}}"#),
    .init(
      code: "target-content-id-type", fact: "Apple: target-content-id is a string",
      bad: #"{"aps": {"target-content-id": ⟦7⟧}}"#, good: #"{"aps": {"target-content-id": "7"}}"#),
    .init(
      code: "ab-type", fact: "ABKPushUtils.m: ab is a dictionary", bad: #"{"aps": {}, "ab": ⟦[]⟧}"#,
      good: #"{"aps": {}, "ab": {"c": 1}}"#),
    .init(
      code: "ab-empty", fact: "ABKPushUtils.m: a Braze push has a non-empty ab", bad: #"{"aps": {}, "ab": ⟦{}⟧}"#,
      good: #"{"aps": {}, "ab": {"c": 1}}"#),
    .init(
      code: "att-type", fact: "rich_notifications.md: att is {url, type}",
      bad: #"{"aps": {"mutable-content": 1}, "ab": {"att": ⟦"x.jpg"⟧}}"#,
      good: #"{"aps": {"mutable-content": 1}, "ab": {"att": {"url": "https://x.example/a.jpg", "type": "jpg"}}}"#),
    .init(
      code: "att-url", fact: "rich_notifications.md: att.url is downloaded",
      bad: #"{"aps": {"mutable-content": 1}, "ab": {"att": {"url": ⟦"x.jpg"⟧, "type": "jpg"}}}"#,
      good: #"{"aps": {"mutable-content": 1}, "ab": {"att": {"url": "https://x.example/a.jpg", "type": "jpg"}}}"#),
    .init(
      code: "att-file-type", fact: "apple_object.md: asset_file_type aif, gif, jpg, m4a, mp3, mp4, png, wav",
      bad: #"{"aps": {"mutable-content": 1}, "ab": {"att": {"url": "https://x.example/a", "type": ⟦"jpeg"⟧}}}"#,
      good: #"{"aps": {"mutable-content": 1}, "ab": {"att": {"url": "https://x.example/a", "type": "png"}}}"#),
    .init(
      code: "ab-uri-url", fact: "reading_verbose_logs.md: ab_uri is the deep link",
      bad: #"{"aps": {}, "ab_uri": ⟦"item/3"⟧}"#, good: #"{"aps": {}, "ab_uri": "myapp://item/3"}"#),
    .init(
      code: "push-story-category", fact: "Push Story's category is ab_cat_push_story_v2 (Info.plist)",
      bad: #"{"aps": {"category": ⟦"promo"⟧}, "ab": {"ab_carousel": {}}}"#,
      good: #"{"aps": {"category": "ab_cat_push_story_v2"}, "ab": {"ab_carousel": {}}}"#),
    .init(
      code: "push-story-marker", fact: "ABKPushUtils.m: ab.ab_carousel marks a Push Story",
      bad: #"{"aps": {"category": ⟦"ab_cat_push_story_v2"⟧}, "ab": {"c": 1}}"#,
      good: #"{"aps": {"category": "ab_cat_push_story_v2"}, "ab": {"ab_carousel": {}}}"#),
    .init(
      code: "content-card-marker", fact: "ABKPushUtils.m: ab.ab_cd marks a Content Card push",
      bad: #"{"aps": {}, "ab": {⟦"ab_cd"⟧: {}}}"#, good: #"{"aps": {}, "ab": {"c": 1}}"#),
    .init(
      code: "extras-braze-keys", fact: "apple_object.md: ab or aps in the extra object is rejected",
      bad: #"{"aps": {}, "data": {⟦"aps"⟧: {}}}"#, good: #"{"aps": {}, "data": {"id": 1}}"#),
    .init(
      code: "extra-null", fact: "key_value_pairs.md: object, array, string, number, Boolean",
      bad: #"{"aps": {}, "item": ⟦null⟧}"#, good: #"{"aps": {}, "item": false}"#),
    .init(
      code: "braze-id-type", fact: "logging_message_data.md: braze_id identifies the user",
      bad: #"{"aps": {}, "braze_id": ⟦""⟧}"#, good: #"{"aps": {}, "braze_id": "b-1"}"#),
    .init(
      code: "liquid-unrendered", fact: "key_value_pairs.md: values are Liquid-rendered by Braze",
      bad: #"{"aps": {}, "name": ⟦"{{first_name}}"⟧}"#, good: #"{"aps": {}, "name": "Ada"}"#),
    .init(
      code: "attachment-needs-mutable-content", fact: "apple_object.md: rich notifications set mutable-content 1",
      bad: #"{"aps": {}, "ab": {⟦"att"⟧: {"url": "https://x.example/a.jpg", "type": "jpg"}}}"#,
      good: #"{"aps": {"mutable-content": 1}, "ab": {"att": {"url": "https://x.example/a.jpg", "type": "jpg"}}}"#),
    .init(
      code: "silent-with-alert", fact: "Apple: a background notification has no alert, sound or badge",
      bad: #"{"aps": {⟦"content-available"⟧: 1, "alert": "hi"}}"#, good: #"{"aps": {"content-available": 1}}"#),
    .init(
      code: "braze-category-unknown", fact: "apple_object.md: ab_cat_accept_decline, yes_no, confirm_cancel, more",
      bad: #"{"aps": {"category": ⟦"ab_cat_yes"⟧}}"#, good: #"{"aps": {"category": "ab_cat_yes_no"}}"#),
    .init(
      code: "braze-category-buttons", fact: "apple_object.md: ab_cat_yes_no has ab_pb_yes and ab_pb_no",
      bad: #"{"aps": {"category": "ab_cat_yes_no"}, "buttons": [{"action_id": ⟦"ab_pb_accept"⟧}]}"#,
      good: #"{"aps": {"category": "ab_cat_yes_no"}, "buttons": [{"action_id": "ab_pb_yes"}]}"#),
    .init(
      code: "simulator-bundle-id", fact: "Xcode 11.4: Simulator Target Bundle names the app",
      bad: #"{"aps": {}, "Simulator Target Bundle": ⟦"my app"⟧}"#,
      good: #"{"aps": {}, "Simulator Target Bundle": "com.example.app"}"#),
  ]

  @Test("every rule in the table has a case, and every case a rule")
  func everyRuleHasACase() {
    let tested = Set(Self.cases.map(\.code) + ["document-too-large"])  // tooLargeDocumentsGetOneFinding
    #expect(Set(PayloadRules.table.map(\.code)) == tested)
    #expect(PayloadRules.table.count == Set(PayloadRules.table.map(\.code)).count, "codes are unique")
  }

  @Test("each rule finds its case at the exact bytes, and not the case put right", arguments: cases)
  func ruleFindsItsCase(_ c: PayloadRuleCase) {
    let (bytes, range) = PayloadRuleCase.document(c.bad)
    let findings = PayloadCheck.check(bytes).findings.filter { $0.code == c.code }
    #expect(findings.map { $0.start..<$0.end } == [range!], "\(c.code): \(c.fact)")
    let good = PayloadCheck.check(PayloadRuleCase.document(c.good).bytes).findings
    #expect(!good.contains { $0.code == c.code }, "\(c.code) on the good payload: \(good.map(\.message))")
  }

  @Test("a document over the cap gets one finding and is not read")
  func tooLargeDocumentsGetOneFinding() {
    let finding = PayloadCheck.tooLarge(byteCount: 2000, limit: 1000)
    #expect(finding.code == "document-too-large" && finding.rule?.severity == .error)
  }

  @Test("every known key has a hover naming its rules and a link")
  func everyKnownKeyHasAHover() {
    for key in PayloadRules.keys {
      let hover = PayloadRules.hover(forKey: key.path)
      #expect(hover?.contains(key.href) == true, "\(key.path)")
      for rule in PayloadRules.table where rule.path == key.path {
        #expect(hover?.contains("`\(rule.code)`") == true, "\(key.path) names \(rule.code)")
      }
    }
  }

  @Test(
    "the quick fixes repair what they are for",
    arguments: ["badge-type", "duplicate-key", "attachment-needs-mutable-content", "mutable-content-value"])
  func fixesRepair(_ code: String) throws {
    var bad = Self.cases.first { $0.code == code }!.bad
    if code == "mutable-content-value" { bad = #"{"aps": {"mutable-content": ⟦"1"⟧}}"# }
    let bytes = PayloadRuleCase.document(bad).bytes
    let finding = try #require(PayloadCheck.check(bytes).findings.first { $0.code == code })
    let fixed = try #require(finding.fix).applied(to: bytes)
    let after = PayloadCheck.check(fixed).findings
    #expect(after.isEmpty, "\(String(decoding: fixed, as: UTF8.self)): \(after.map(\.message))")
  }

  @Test("a fix adds aps when there is none")
  func fixAddsAps() throws {
    let bytes = Array(#"{"ab": {"att": {"url": "https://x.example/a.jpg", "type": "jpg"}}}"#.utf8)
    let finding = try #require(
      PayloadCheck.check(bytes).findings.first { $0.code == "attachment-needs-mutable-content" })
    let fixed = try #require(finding.fix).applied(to: bytes)
    #expect(PayloadCheck.check(fixed).findings.isEmpty)
  }
}
