/// A JSON value that renders itself with sorted keys, exact integers and RFC 8259 escaping
/// (without JSONSerialization, which is slow and formats numbers oddly on Linux).
public enum JSONValue: Sendable, Equatable {
  /// `null`.
  case null
  /// `true` or `false`.
  case bool(Bool)
  /// An integer, printed exactly.
  case int(Int64)
  /// A floating-point number (`null` when not finite).
  case double(Double)
  /// A string, escaped per RFC 8259.
  case string(String)
  /// An array.
  case array([JSONValue])
  /// An object; keys are rendered sorted.
  case object([String: JSONValue])

  /// The JSON text: pretty-printed with two-space indentation (`"key": value`) or compact.
  /// Keys are sorted; non-finite doubles render as `null`.
  public func render(pretty: Bool = true) -> String {
    var bytes: [UInt8] = []
    write(to: &bytes, pretty: pretty, depth: 0)
    return String(decoding: bytes, as: UTF8.self)
  }

  private func write(to out: inout [UInt8], pretty: Bool, depth: Int) {
    func newline(_ depth: Int) {
      guard pretty else { return }
      out.append(UInt8(ascii: "\n"))
      out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: depth * 2))
    }
    switch self {
    case .null: out.append(contentsOf: "null".utf8)
    case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
    case .int(let value): out.append(contentsOf: String(value).utf8)
    case .double(let value):
      // Swift's shortest round-trip form ("0.1", "5.0", "1e-07") is valid JSON when finite.
      out.append(contentsOf: (value.isFinite ? value.description : "null").utf8)
    case .string(let value): JSONValue.writeString(value, to: &out)
    case .array(let elements):
      guard !elements.isEmpty else {
        out.append(contentsOf: "[]".utf8)
        return
      }
      out.append(UInt8(ascii: "["))
      for (index, element) in elements.enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        newline(depth + 1)
        element.write(to: &out, pretty: pretty, depth: depth + 1)
      }
      newline(depth)
      out.append(UInt8(ascii: "]"))
    case .object(let members):
      guard !members.isEmpty else {
        out.append(contentsOf: "{}".utf8)
        return
      }
      out.append(UInt8(ascii: "{"))
      for (index, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        newline(depth + 1)
        JSONValue.writeString(member.key, to: &out)
        out.append(contentsOf: (pretty ? ": " : ":").utf8)
        member.value.write(to: &out, pretty: pretty, depth: depth + 1)
      }
      newline(depth)
      out.append(UInt8(ascii: "}"))
    }
  }

  /// Writes `text` as a quoted JSON string: `"` and `\` escaped, control characters as
  /// `\n`, `\r`, `\t`, `\b`, `\f` or `\u00XX`; everything else (emoji, CJK) as raw UTF-8.
  private static let hex = Array("0123456789abcdef".utf8)

  static func writeString(_ text: String, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    for byte in text.utf8 {
      switch byte {
      case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
      case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
      case 0x0A: out.append(contentsOf: #"\n"#.utf8)
      case 0x0D: out.append(contentsOf: #"\r"#.utf8)
      case 0x09: out.append(contentsOf: #"\t"#.utf8)
      case 0x08: out.append(contentsOf: #"\b"#.utf8)
      case 0x0C: out.append(contentsOf: #"\f"#.utf8)
      case 0x00..<0x20: out.append(contentsOf: #"\u00"#.utf8 + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
      default: out.append(byte)
      }
    }
    out.append(UInt8(ascii: "\""))
  }
}

extension JSONValue: ExpressibleByNilLiteral {
  /// `nil` is JSON `null`.
  public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: ExpressibleByBooleanLiteral {
  /// A JSON boolean.
  public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
  /// A JSON integer, printed exactly.
  public init(integerLiteral value: Int64) { self = .int(value) }
}

extension JSONValue: ExpressibleByFloatLiteral {
  /// A JSON floating-point number.
  public init(floatLiteral value: Double) { self = .double(value) }
}

extension JSONValue: ExpressibleByStringLiteral {
  /// A JSON string.
  public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByArrayLiteral {
  /// A JSON array.
  public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
  /// A JSON object (a later duplicate key wins).
  public init(dictionaryLiteral elements: (String, JSONValue)...) {
    self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
  }
}

/// One JSON object written member by member, in the order the caller gives: the same bytes
/// as rendering a `JSONValue.object` compactly when the caller gives its keys sorted, without
/// building and sorting a dictionary first (for hot paths that render one shape many times).
///
///     var object = JSONObjectWriter()
///     object.int("id", 7)
///     object.string("name", "Ada")
///     object.text  // {"id":7,"name":"Ada"}
public struct JSONObjectWriter {
  /// The bytes so far (the opening brace and the members written).
  public private(set) var bytes: [UInt8] = [UInt8(ascii: "{")]

  /// An empty object.
  public init() {}

  private mutating func key(_ name: StaticString) {
    if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
    bytes.append(UInt8(ascii: "\""))
    name.withUTF8Buffer { bytes.append(contentsOf: $0) }
    bytes.append(contentsOf: "\":".utf8)
  }

  /// `"name":value`.
  public mutating func int(_ name: StaticString, _ value: Int64) {
    key(name)
    bytes.append(contentsOf: String(value).utf8)
  }

  /// `"name":"value"`, escaped as `JSONValue` escapes strings.
  public mutating func string(_ name: StaticString, _ value: String) {
    key(name)
    JSONValue.writeString(value, to: &bytes)
  }

  /// `"name":true` or `false`.
  public mutating func bool(_ name: StaticString, _ value: Bool) {
    key(name)
    bytes.append(contentsOf: (value ? "true" : "false").utf8)
  }

  /// `"name":` followed by JSON text already rendered.
  public mutating func raw(_ name: StaticString, _ json: some Collection<UInt8>) {
    key(name)
    bytes.append(contentsOf: json)
  }

  /// The object's text, closed.
  public var text: String { String(decoding: closed, as: UTF8.self) }

  /// The object's bytes, closed.
  public var closed: [UInt8] { bytes + [UInt8(ascii: "}")] }
}
