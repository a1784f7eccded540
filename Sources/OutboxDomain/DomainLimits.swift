/// What to do with a string value longer than Braze's 255-character limit.
///
/// The iOS and Android SDKs truncate ("longer values will be truncated", Swift docs
/// `setting_user_attributes.md`; `ABKUser.h`); the REST docs only state the limit
/// (`custom_attributes.md`). domain.md §7 asks for a switch: `--strings reject|truncate`.
package enum StringPolicy: String, Sendable {
  /// An over-long string is an error (`string_too_long`).
  case reject
  /// An over-long string is cut to 255 characters and a `string_truncated` warning is added.
  case truncate
}

/// The configurable Braze limits. Each one is a command-line flag, because Braze's own pages
/// disagree about them (domain.md §7).
package struct DomainLimits: Sendable {
  /// `--strings`: over-long string values are rejected or truncated.
  package var strings: StringPolicy = .reject
  /// `--array-limit`: the most elements in a custom attribute array. 25 by default, "can be
  /// increased up to 100" (`user_attributes_object.md`); newer text says 500 (`custom_attributes.md`).
  package var arrayLimit = 25
  /// `--max-properties-bytes`: the cap on the compact JSON text of event properties.
  /// 50 KB (`Appboy.h`, Web SDK `CUSTOM_PROPERTIES_MAX_SIZE_BYTES` = 51200) versus 100 KB (current `event_object.md`).
  package var maxPropertiesBytes = 51_200
  /// The cap on the compact JSON text of a nested custom attribute: "100 KB"
  /// (`nested_custom_attribute_support.md`).
  package var maxNestedAttributeBytes = 102_400

  package init() {}
}

/// Braze's 255-"character" limit on names, keys and string values.
///
/// A character here is a **Unicode scalar** (`s.unicodeScalars.count`). Braze says "characters,
/// not bytes" (Swift SDK CHANGELOG 10.3.0) without saying which kind; scalars are what code-point
/// counting languages report, they count a precomposed "é" as one (so 255 of them pass although
/// they take 510 bytes), and they are cheap: a string of at most 255 UTF-8 bytes needs no count at all.
/// A decomposed "é" (e + U+0301) counts as two.
public enum TextLimit {
  /// Braze's limit for names, keys and string values.
  @inlinable public static var maxCharacters: Int { 255 }

  /// True when text of `byteCount` UTF-8 bytes fits without counting: at most `maxCharacters`
  /// bytes hold at most as many characters. (More bytes may still fit: count them, `fits`.)
  @inlinable @inline(__always)
  public static func fitsUncounted(byteCount: Int) -> Bool { byteCount <= maxCharacters }

  /// The number of Unicode scalars in `s`, counted from its UTF-8 without decoding.
  static func characterCount(_ s: String) -> Int {
    var n = 0
    for b in s.utf8 where b & 0xC0 != 0x80 { n += 1 }
    return n
  }

  /// The number of Unicode scalars in UTF-8 `bytes`.
  static func characterCount(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
    var n = 0
    for b in bytes where b & 0xC0 != 0x80 { n += 1 }
    return n
  }

  /// True when UTF-8 `bytes` hold at most `max` characters. O(1) for at most `max` bytes.
  @inline(__always)
  package static func fits(_ bytes: UnsafeBufferPointer<UInt8>, max: Int = maxCharacters) -> Bool {
    if bytes.count <= max { return true }
    if bytes.count > max * 4 { return false }
    return characterCount(bytes) <= max
  }

  /// `checkValue` for UTF-8 `bytes`: adds `string_too_long` (reject) or `string_truncated` (truncate)
  /// for an over-long value; returns true when the value must be truncated.
  @inline(__always)
  package static func check(
    _ bytes: UnsafeBufferPointer<UInt8>, path: () -> String, policy: StringPolicy, issues: inout Issues
  ) -> Bool {
    if fits(bytes) { return false }
    let count = characterCount(bytes)
    switch policy {
    case .reject:
      issues.error(path(), "string_too_long", "string has \(count) characters; Braze allows at most \(maxCharacters)")
      return false
    case .truncate:
      issues.warn(path(), "string_truncated", "string of \(count) characters was truncated to \(maxCharacters)")
      return true
    }
  }

  /// True when `s` has at most `max` characters. O(1) for strings of at most `max` bytes.
  @inline(__always)
  package static func fits(_ s: String, max: Int = maxCharacters) -> Bool {
    let bytes = s.utf8.count
    if bytes <= max { return true }
    if bytes > max * 4 { return false }  // a scalar takes at most 4 bytes
    return characterCount(s) <= max
  }

  /// The longest prefix of `s` with at most `max` characters. Whole grapheme clusters are kept
  /// together where possible (a cut never leaves half an emoji sequence or a lone accent base);
  /// only a single cluster longer than `max` scalars is cut inside, and then between scalars.
  package static func truncate(_ s: String, to max: Int = maxCharacters) -> String {
    var scalars = 0
    var end = s.startIndex
    for index in s.indices {
      let next = s.index(after: index)
      let width = s.unicodeScalars[index..<next].count
      if scalars + width > max { break }
      scalars += width
      end = next
    }
    if end == s.startIndex, !s.isEmpty {
      let cut = s.unicodeScalars.index(s.unicodeScalars.startIndex, offsetBy: max)
      return String(s.unicodeScalars[..<cut])
    }
    return String(s[..<end])
  }

  /// Checks a string value against the 255-character limit under `policy`.
  ///
  /// Returns nil when the value stays as it is (it fits, or it is too long and an error
  /// `string_too_long` was added), or the truncated string (with a `string_truncated` warning).
  static func checkValue(
    _ s: String, path: () -> String, policy: StringPolicy, issues: inout Issues
  ) -> String? {
    if fits(s) { return nil }
    let count = characterCount(s)
    switch policy {
    case .reject:
      issues.error(path(), "string_too_long", "string has \(count) characters; Braze allows at most \(maxCharacters)")
      return nil
    case .truncate:
      issues.warn(path(), "string_truncated", "string of \(count) characters was truncated to \(maxCharacters)")
      return truncate(s)
    }
  }
}
