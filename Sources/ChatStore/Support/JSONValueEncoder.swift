/// Turns any `Encodable` into a `JSONValue`, so typed results render with `JSONValue`'s
/// sorted keys, exact integers and escaping (and never through JSONSerialization).
///
/// ```swift
/// struct Freed: Encodable { var bytesFreed: Int64; var into: String? }
/// try JSONValueEncoder().encode(Freed(bytesFreed: 4096, into: nil)).render(pretty: false)
/// // {"bytesFreed":4096,"into":null}
/// ```
///
/// Differences from `JSONEncoder`, on purpose:
/// - an optional property that is nil is written as `null` (synthesized `encode(to:)`
///   calls `encodeIfPresent`, which `JSONEncoder` turns into an absent key);
/// - every integer type is `.int`, `Double` and `Float` are `.double`;
/// - a `JSONValue` inside the value is kept as it is.
public struct JSONValueEncoder: Sendable {
  public init() {}

  /// The value as JSON.
  public func encode(_ value: some Encodable) throws -> JSONValue {
    try encodeWithOptionalKeys(value).value
  }

  /// The value as JSON and the paths of the object members that are optional in the
  /// type (written by `encodeIfPresent`), such as `hits[].snippet`: what a schema table
  /// needs to say "or null".
  public func encodeWithOptionalKeys(_ value: some Encodable) throws -> (value: JSONValue, optionalKeys: Set<String>) {
    let state = EncodingState()
    let node = try boxed(value, path: [], state: state)
    return (node.value, state.optionalKeys)
  }
}

/// `value` as a node; a `JSONValue` is kept as it is.
private func boxed(_ value: some Encodable, path: [any CodingKey], state: EncodingState) throws -> Node {
  if let json = value as? JSONValue { return Node(json) }
  let encoder = ValueEncoder(codingPath: path, state: state)
  try value.encode(to: encoder)
  return encoder.node ?? Node(.object)
}

extension JSONValue: Encodable {
  /// Encodes the value through any encoder (`JSONValueEncoder` keeps it as it is).
  public func encode(to encoder: any Encoder) throws {
    switch self {
    case .null:
      var container = encoder.singleValueContainer()
      try container.encodeNil()
    case .bool(let value):
      var container = encoder.singleValueContainer()
      try container.encode(value)
    case .int(let value):
      var container = encoder.singleValueContainer()
      try container.encode(value)
    case .double(let value):
      var container = encoder.singleValueContainer()
      try container.encode(value)
    case .string(let value):
      var container = encoder.singleValueContainer()
      try container.encode(value)
    case .array(let elements):
      var container = encoder.unkeyedContainer()
      for element in elements { try container.encode(element) }
    case .object(let members):
      var container = encoder.container(keyedBy: JSONKey.self)
      for (key, value) in members { try container.encode(value, forKey: JSONKey(stringValue: key)) }
    }
  }
}

// MARK: - The encoder's parts

/// A coding key made from any string or index.
private struct JSONKey: CodingKey {
  var stringValue: String
  var intValue: Int?
  init(stringValue: String) { self.stringValue = stringValue }
  init(intValue: Int) {
    stringValue = String(intValue)
    self.intValue = intValue
  }
}

/// What one encoding has learned beside the value. A class, because containers are
/// values that share it; used by one thread, during one `encode` call.
private final class EncodingState {
  var optionalKeys: Set<String> = []

  /// `hits[].snippet` for the coding path `hits, 0, snippet`.
  static func pathText(_ path: [any CodingKey]) -> String {
    var text = ""
    for key in path {
      if key.intValue != nil, key is JSONKey {
        text += "[]"
      } else {
        text += (text.isEmpty ? "" : ".") + key.stringValue
      }
    }
    return text
  }
}

/// A JSON value under construction: containers hand out nodes that are filled later.
/// Arrays and objects are stored properties so that appending is in place.
private final class Node {
  enum Kind { case scalar, array, object }
  var kind: Kind
  var scalar: JSONValue = .null
  var elements: [Node] = []
  var members: [String: Node] = [:]
  init(_ value: JSONValue) {
    kind = .scalar
    scalar = value
  }
  init(_ kind: Kind) { self.kind = kind }

  /// Makes this node a copy of `other` (for `superEncoder`).
  func take(_ other: Node) {
    kind = other.kind
    scalar = other.scalar
    elements = other.elements
    members = other.members
  }

  var value: JSONValue {
    switch kind {
    case .scalar: scalar
    case .array: .array(elements.map(\.value))
    case .object: .object(members.mapValues(\.value))
    }
  }
}

private final class ValueEncoder: Encoder {
  let codingPath: [any CodingKey]
  let state: EncodingState
  var userInfo: [CodingUserInfoKey: Any] { [:] }
  var node: Node?

  init(codingPath: [any CodingKey], state: EncodingState) {
    self.codingPath = codingPath
    self.state = state
  }

  func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
    let object: Node
    if let node, node.kind == .object {
      object = node
    } else {
      object = Node(.object)
      node = object
    }
    return KeyedEncodingContainer(ObjectContainer<Key>(object: object, codingPath: codingPath, state: state))
  }

  func unkeyedContainer() -> any UnkeyedEncodingContainer {
    let array: Node
    if let node, node.kind == .array {
      array = node
    } else {
      array = Node(.array)
      node = array
    }
    return ArrayContainer(array: array, codingPath: codingPath, state: state)
  }

  func singleValueContainer() -> any SingleValueEncodingContainer { SingleContainer(encoder: self) }
}

private struct SingleContainer: SingleValueEncodingContainer {
  let encoder: ValueEncoder
  var codingPath: [any CodingKey] { encoder.codingPath }
  private func set(_ value: JSONValue) { encoder.node = Node(value) }
  mutating func encodeNil() throws { set(.null) }
  mutating func encode(_ value: Bool) throws { set(.bool(value)) }
  mutating func encode(_ value: String) throws { set(.string(value)) }
  mutating func encode(_ value: Double) throws { set(.double(value)) }
  mutating func encode(_ value: Float) throws { set(.double(Double(value))) }
  mutating func encode(_ value: Int) throws { set(.int(Int64(value))) }
  mutating func encode(_ value: Int8) throws { set(.int(Int64(value))) }
  mutating func encode(_ value: Int16) throws { set(.int(Int64(value))) }
  mutating func encode(_ value: Int32) throws { set(.int(Int64(value))) }
  mutating func encode(_ value: Int64) throws { set(.int(value)) }
  mutating func encode(_ value: UInt) throws { set(.int(Int64(value))) }
  mutating func encode(_ value: UInt8) throws { set(.int(Int64(value))) }
  mutating func encode(_ value: UInt16) throws { set(.int(Int64(value))) }
  mutating func encode(_ value: UInt32) throws { set(.int(Int64(value))) }
  mutating func encode(_ value: UInt64) throws { set(.int(Int64(bitPattern: value))) }
  mutating func encode(_ value: some Encodable) throws {
    encoder.node = try boxed(value, path: codingPath, state: encoder.state)
  }
}

private struct ArrayContainer: UnkeyedEncodingContainer {
  let array: Node
  let codingPath: [any CodingKey]
  let state: EncodingState
  var count: Int { array.elements.count }

  private func append(_ node: Node) { array.elements.append(node) }
  private var nextPath: [any CodingKey] { codingPath + [JSONKey(intValue: count)] }

  mutating func encodeNil() throws { append(Node(.null)) }
  mutating func encode(_ value: Bool) throws { append(Node(.bool(value))) }
  mutating func encode(_ value: String) throws { append(Node(.string(value))) }
  mutating func encode(_ value: Double) throws { append(Node(.double(value))) }
  mutating func encode(_ value: Int64) throws { append(Node(.int(value))) }
  mutating func encode(_ value: Int) throws { append(Node(.int(Int64(value)))) }
  mutating func encode(_ value: some Encodable) throws {
    append(try boxed(value, path: nextPath, state: state))
  }

  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
    -> KeyedEncodingContainer<NestedKey>
  {
    let object = Node(.object)
    let path = nextPath
    append(object)
    return KeyedEncodingContainer(ObjectContainer<NestedKey>(object: object, codingPath: path, state: state))
  }

  mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
    let nested = Node(.array)
    let path = nextPath
    append(nested)
    return ArrayContainer(array: nested, codingPath: path, state: state)
  }

  mutating func superEncoder() -> any Encoder {
    let encoder = ValueEncoder(codingPath: nextPath, state: state)
    let placeholder = Node(.null)
    append(placeholder)
    return DeferredEncoder(encoder: encoder, target: placeholder)
  }
}

/// An encoder whose result lands in a node already placed in its parent (for `superEncoder`).
private final class DeferredEncoder: Encoder {
  let encoder: ValueEncoder
  let target: Node
  init(encoder: ValueEncoder, target: Node) {
    self.encoder = encoder
    self.target = target
  }
  var codingPath: [any CodingKey] { encoder.codingPath }
  var userInfo: [CodingUserInfoKey: Any] { [:] }
  func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
    let container = encoder.container(keyedBy: type)
    if let node = encoder.node { target.take(node) }
    encoder.node = target
    return container
  }
  func unkeyedContainer() -> any UnkeyedEncodingContainer {
    let container = encoder.unkeyedContainer()
    if let node = encoder.node { target.take(node) }
    encoder.node = target
    return container
  }
  func singleValueContainer() -> any SingleValueEncodingContainer {
    SingleTargetContainer(target: target, codingPath: codingPath, state: encoder.state)
  }
}

private struct SingleTargetContainer: SingleValueEncodingContainer {
  let target: Node
  let codingPath: [any CodingKey]
  let state: EncodingState
  mutating func encodeNil() throws { target.take(Node(.null)) }
  mutating func encode(_ value: some Encodable) throws {
    target.take(try boxed(value, path: codingPath, state: state))
  }
}

private struct ObjectContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
  let object: Node
  let codingPath: [any CodingKey]
  let state: EncodingState

  private func set(_ node: Node, _ key: Key) { object.members[key.stringValue] = node }
  private func set(_ value: JSONValue, _ key: Key) { set(Node(value), key) }

  /// Records that `key` is optional in the type, and writes `null` when it is nil.
  private func setOptional<T>(_ value: T?, _ key: Key, _ encode: (T) throws -> Void) rethrows {
    state.optionalKeys.insert(EncodingState.pathText(codingPath + [key]))
    if let value { try encode(value) } else { set(.null, key) }
  }

  mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
  mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
  mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
  mutating func encode(_ value: Double, forKey key: Key) throws { set(.double(value), key) }
  mutating func encode(_ value: Float, forKey key: Key) throws { set(.double(Double(value)), key) }
  mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(Int64(value)), key) }
  mutating func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int64(value)), key) }
  mutating func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int64(value)), key) }
  mutating func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int64(value)), key) }
  mutating func encode(_ value: Int64, forKey key: Key) throws { set(.int(value), key) }
  mutating func encode(_ value: UInt, forKey key: Key) throws { set(.int(Int64(value)), key) }
  mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.int(Int64(value)), key) }
  mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.int(Int64(value)), key) }
  mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.int(Int64(value)), key) }
  mutating func encode(_ value: UInt64, forKey key: Key) throws { set(.int(Int64(bitPattern: value)), key) }
  mutating func encode(_ value: some Encodable, forKey key: Key) throws {
    set(try boxed(value, path: codingPath + [key], state: state), key)
  }

  mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws {
    try setOptional(value, key) { try encode($0, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws {
    try setOptional(value, key) { try encode($0, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws {
    try setOptional(value, key) { try encode($0, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws {
    try setOptional(value, key) { try encode($0, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws {
    try setOptional(value, key) { try encode($0, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws {
    try setOptional(value, key) { try encode($0, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws {
    try setOptional(value, key) { try encode($0, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws {
    try setOptional(value, key) { try encode($0, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws {
    try setOptional(value, key) { try encode($0, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws {
    try setOptional(value, key) { try encode($0, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws {
    try setOptional(value, key) { try encode($0, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws {
    try setOptional(value, key) { try encode($0, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws {
    try setOptional(value, key) { try encode($0, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws {
    try setOptional(value, key) { try encode($0, forKey: key) }
  }
  mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
    try setOptional(value, key) { try encode($0, forKey: key) }
  }

  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
    -> KeyedEncodingContainer<NestedKey>
  {
    let nested = Node(.object)
    set(nested, key)
    return KeyedEncodingContainer(
      ObjectContainer<NestedKey>(object: nested, codingPath: codingPath + [key], state: state))
  }

  mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
    let nested = Node(.array)
    set(nested, key)
    return ArrayContainer(array: nested, codingPath: codingPath + [key], state: state)
  }

  mutating func superEncoder() -> any Encoder { superEncoder(forKey: Key(stringValue: "super")!) }

  mutating func superEncoder(forKey key: Key) -> any Encoder {
    let placeholder = Node(.null)
    set(placeholder, key)
    return DeferredEncoder(encoder: ValueEncoder(codingPath: codingPath + [key], state: state), target: placeholder)
  }
}
