import ChatStore

/// Why one line could not be read as a record: the field and the reason, for
/// `FILE:LINE: <field and reason>` messages.
public struct RecordError: Error, CustomStringConvertible, Sendable {
  public var description: String
  /// The line the record came from, when it is not the line being read (a record
  /// found bad when a batch of them is written).
  public var line: Int?
  public init(_ description: String, line: Int? = nil) {
    self.description = description
    self.line = line
  }
  static func field(_ name: String, _ reason: String) -> RecordError { RecordError("field '\(name)': \(reason)") }
}

/// The longest message or request content accepted, in UTF-8 bytes (64 KiB).
public let maximumContentBytes = ChatRepository.maximumContentBytes

/// Reads one NDJSON line of a chatdb history: a flat JSON object whose fields it keeps
/// in one scratch buffer, so a line costs no allocation beyond the strings a caller
/// asks for. Unknown fields are skipped, whatever their type.
///
/// The parser is strict where the data matters: UTF-8 must be valid, integers must be
/// integers in range, enums must be known values, times must be ISO 8601.
public final class RecordParser {
  /// The fields a history line may have.
  enum Key: Int, CaseIterable {
    case type, id, fromUserId, toUserId, content, status, createdAt, requestId, name, avatarUrl, lastConnectedAt
    case lastModifiedAt, lastSentAt, failCount, nextAttemptAt, failReason
    case format, version, schemaVersion, userId, exportedAt, filters, users, messages, requests
    case editedAt, deletedAt, messageId, edits
    case attachments, media, mediaBytes, sha256, size, offset, data

    static let names: [[UInt8]] = allCases.map { Array(String(describing: $0).utf8) }
  }

  /// A parsed field value; strings live in `scratch`.
  enum Value: Equatable {
    case absent, null
    case bool(Bool)
    case int(Int64)
    case number
    case string(start: Int, count: Int)
    case object, array
  }

  private(set) var values = [Value](repeating: .absent, count: Key.allCases.count)
  /// Unescaped string bytes of the current line.
  private(set) var scratch: [UInt8] = []
  /// `filters` of a header, in order.
  private(set) var filters: [(String, String)] = []
  /// The `attachments` of a message or request (format 3), checked as they are read.
  private(set) var attachments: [Attachment] = []

  public init() { scratch.reserveCapacity(1 << 16) }

  // MARK: - Lines

  /// What a line is.
  public enum Kind: Equatable, Sendable { case header, trailer, user, message, request, edit }

  /// What a line is, a `media` line of file bytes (format 3) included.
  public enum Line: Equatable, Sendable {
    case kind(Kind)
    /// A piece of a media file (read with ``mediaPiece()``).
    case media
  }

  /// Parses `line`, which must not be a `media` line; afterwards the typed accessors
  /// read its fields.
  public func parse(_ line: UnsafeBufferPointer<UInt8>) throws(RecordError) -> Kind {
    switch try parseLine(line) {
    case .kind(let kind): return kind
    case .media: throw RecordError.field("type", "a media line holds a file's bytes, not a record")
    }
  }

  /// Parses `line`, a `media` line too; afterwards the typed accessors read its fields.
  public func parseLine(_ line: UnsafeBufferPointer<UInt8>) throws(RecordError) -> Line {
    for i in values.indices { values[i] = .absent }
    scratch.removeAll(keepingCapacity: true)
    filters.removeAll()
    attachments.removeAll(keepingCapacity: true)
    var scanner = Scanner(bytes: line)
    try parseObject(&scanner)
    scanner.skipSpace()
    guard scanner.atEnd else { throw RecordError("unexpected text after the JSON object") }
    guard case .string = values[Key.type.rawValue] else {
      throw values[Key.type.rawValue] == .absent
        ? RecordError("missing field 'type'") : RecordError.field("type", "must be a string")
    }
    switch typeText {
    case "message": return .kind(.message)
    case "user": return .kind(.user)
    case "request": return .kind(.request)
    case "edit": return .kind(.edit)
    case "media": return .media
    case "header": return .kind(.header)
    case "trailer": return .kind(.trailer)
    case let other: throw RecordError.field("type", "unknown record type '\(other)'")
    }
  }

  // MARK: - Field access

  /// A required positive 64-bit integer.
  func id(_ key: Key) throws(RecordError) -> Int64 {
    switch values[key.rawValue] {
    case .int(let v) where v > 0: return v
    case .int(let v): throw RecordError.field("\(key)", "\(v) is out of range (ids are 1…9223372036854775807)")
    case .absent: throw RecordError.field("\(key)", "missing")
    case .number: throw RecordError.field("\(key)", "not an integer, or out of range")
    default: throw RecordError.field("\(key)", "must be an integer")
    }
  }

  /// An optional positive id (absent or null → nil).
  func optionalID(_ key: Key) throws(RecordError) -> Int64? {
    switch values[key.rawValue] {
    case .absent, .null: nil
    default: try id(key)
    }
  }

  /// An optional integer ≥ 0 with a default.
  func count(_ key: Key, default fallback: Int64) throws(RecordError) -> Int64 {
    switch values[key.rawValue] {
    case .absent, .null: return fallback
    case .int(let v) where v >= 0: return v
    case .int(let v): throw RecordError.field("\(key)", "\(v) is negative")
    default: throw RecordError.field("\(key)", "must be an integer")
    }
  }

  /// An optional integer ≥ 0 (absent or null → nil).
  func optionalCount(_ key: Key) throws(RecordError) -> Int64? {
    switch values[key.rawValue] {
    case .absent, .null: nil
    default: try count(key, default: 0)
    }
  }

  /// Whether a field is a string.
  func isString(_ key: Key) -> Bool { if case .string = values[key.rawValue] { true } else { false } }

  /// The bytes of a required string field, with its length limit.
  func withBytes<R>(_ key: Key, maxBytes: Int = 4096, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) throws -> R {
    guard case .string(let start, let count) = values[key.rawValue] else {
      throw values[key.rawValue] == .absent
        ? RecordError.field("\(key)", "missing") : RecordError.field("\(key)", "must be a string")
    }
    guard count <= maxBytes else {
      throw RecordError.field("\(key)", "\(count) bytes is longer than the limit of \(maxBytes)")
    }
    return try scratch.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[start..<(start + count)])) }
  }

  /// A required string field as a String; its bytes must be valid UTF-8.
  func text(_ key: Key, maxBytes: Int = 4096) throws -> String {
    try withBytes(key, maxBytes: maxBytes) { bytes in
      // One validating pass (the standard library's, vectorised); the slow scan that
      // finds the offending byte runs only for the error message.
      if let text = String(validating: bytes, as: UTF8.self) { return text }
      let offset = Self.invalidUTF8Offset(Array(bytes), from: 0) ?? 0
      throw RecordError.field("\(key)", "invalid UTF-8 at byte \(offset + 1)")
    }
  }

  /// The record type's text, for the switch in `parse` (never throws).
  private var typeText: String {
    guard case .string(let start, let count) = values[Key.type.rawValue] else { return "" }
    return String(decoding: scratch[start..<(start + count)], as: UTF8.self)
  }

  /// An optional string (absent or null → nil).
  func optionalText(_ key: Key, maxBytes: Int = 4096) throws -> String? {
    switch values[key.rawValue] {
    case .absent, .null: nil
    default: try text(key, maxBytes: maxBytes)
    }
  }

  /// A required time, returned in the stored form (`Timestamp`).
  func time(_ key: Key) throws -> String {
    try withBytes(key, maxBytes: 64) { bytes in
      guard let ms = Timestamp.milliseconds(utf8: bytes) else {
        throw RecordError.field(
          "\(key)", "'\(String(decoding: bytes, as: UTF8.self))' is not an ISO 8601 time like 2026-01-31T12:00:00.000Z")
      }
      return bytes.count == 24 ? String(decoding: bytes, as: UTF8.self) : Timestamp.string(milliseconds: ms)
    }
  }

  /// An optional time.
  func optionalTime(_ key: Key) throws -> String? {
    switch values[key.rawValue] {
    case .absent, .null: nil
    default: try time(key)
    }
  }

  /// A required enum value.
  func choice<E: RawRepresentable & CaseIterable>(_ key: Key, _ type: E.Type) throws -> E where E.RawValue == String {
    let raw = try text(key, maxBytes: 32)
    guard let value = E(rawValue: raw) else {
      throw RecordError.field("\(key)", "'\(raw)' is not one of \(E.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    return value
  }

  // MARK: - Whole records

  /// The current line as a record (after `parse` returned `.user`, `.message` or `.request`).
  public func record(_ kind: Kind) throws -> Record {
    switch kind {
    case .user:
      return .user(
        User(
          id: try id(.id), name: try text(.name), avatarURL: try optionalText(.avatarUrl),
          lastConnectedAt: try optionalTime(.lastConnectedAt)))
    case .message:
      // Format 2: an edited message's version and time, a tombstone's time of deletion
      // (its content is then "").
      let deletedAt = try optionalTime(.deletedAt)
      let content = try text(.content, maxBytes: maximumContentBytes)
      if deletedAt != nil && !content.isEmpty {
        throw RecordError.field("content", "a message deleted for everyone (deletedAt) keeps no text")
      }
      // Format 3: its media's metadata.
      let attachments = try attachmentList()
      if deletedAt != nil && !attachments.isEmpty {
        throw RecordError.field("attachments", "a message deleted for everyone (deletedAt) keeps no attachments")
      }
      return .message(
        Message(
          id: try id(.id), fromUserID: try id(.fromUserId), toUserID: try id(.toUserId), content: content,
          status: try choice(.status, MessageStatus.self), createdAt: try time(.createdAt),
          requestID: try optionalID(.requestId), version: try count(.version, default: 0),
          editedAt: try optionalTime(.editedAt), deletedAt: deletedAt, attachments: attachments))
    case .request:
      let createdAt = try time(.createdAt)
      return .request(
        MessageRequest(
          requestID: try id(.requestId), toUserID: try id(.toUserId),
          content: try text(.content, maxBytes: maximumContentBytes),
          status: try choice(.status, MessageRequestStatus.self), createdAt: createdAt,
          lastModifiedAt: try optionalTime(.lastModifiedAt) ?? createdAt, lastSentAt: try optionalTime(.lastSentAt),
          failCount: Int(try count(.failCount, default: 0)), nextAttemptAt: try optionalTime(.nextAttemptAt),
          failReason: try optionalText(.failReason)))
    case .edit:
      let version = try count(.version, default: -1)
      guard version >= 0 else { throw RecordError.field("version", "missing") }
      return .edit(
        messageID: try id(.messageId),
        MessageVersion(
          version: version, content: try text(.content, maxBytes: maximumContentBytes), editedAt: try time(.editedAt)))
    case .header, .trailer:
      throw RecordError("a \(kind) line is not a record")
    }
  }

  /// The `attachments` of the current message or request line (format 3): none when
  /// the field is absent or null. A request's are not in its ``Record``
  /// (`MessageRequest` has none); an import reads them here.
  public func attachmentList() throws(RecordError) -> [Attachment] {
    switch values[Key.attachments.rawValue] {
    case .absent, .null: return []
    case .array: return attachments
    default: throw RecordError.field("attachments", "must be an array")
    }
  }

  /// The current line as a piece of a media file (after `parseLine` returned `.media`).
  public func mediaPiece() throws -> MediaPiece {
    let sha256 = try text(.sha256, maxBytes: 128)
    guard MediaFolder.isMediaName(sha256) else {
      throw RecordError.field("sha256", "'\(sha256)' is not a SHA-256 (64 lowercase hex digits)")
    }
    let size = try count(.size, default: -1)
    let offset = try count(.offset, default: -1)
    guard size >= 0 else { throw RecordError.field("size", "missing") }
    guard offset >= 0 else { throw RecordError.field("offset", "missing") }
    let data = try withBytes(.data, maxBytes: Base64.encodedCount(MediaPiece.maximumBytes)) { text in
      guard let data = Base64.decode(text) else { throw RecordError.field("data", "not valid base64") }
      return data
    }
    guard data.count > 0 || size == 0 else {
      throw RecordError.field("data", "empty (only the one line of an empty file is)")
    }
    guard offset <= size - Int64(data.count) else {
      throw RecordError.field(
        "offset", "\(data.count) bytes from \(offset) go past the end of the file (\(size) bytes)")
    }
    return MediaPiece(sha256: sha256, size: size, offset: offset, data: data)
  }

  /// The current line as a header.
  public func header() throws -> HistoryHeader {
    let format = try text(.format)
    guard format == HistoryHeader.formatName else {
      throw RecordError.field("format", "'\(format)' is not \(HistoryHeader.formatName)")
    }
    return HistoryHeader(
      version: Int(try count(.version, default: 0)), schemaVersion: Int(try count(.schemaVersion, default: 0)),
      userID: try id(.userId), exportedAt: try optionalText(.exportedAt) ?? "",
      filters: Dictionary(filters, uniquingKeysWith: { $1 }))
  }

  /// The current line as a trailer.
  public func trailer() throws -> HistoryTrailer {
    let trailer = HistoryTrailer(
      users: try count(.users, default: -1), messages: try count(.messages, default: -1),
      requests: try count(.requests, default: -1), edits: try count(.edits, default: 0),
      media: try optionalCount(.media), mediaBytes: try optionalCount(.mediaBytes))
    // Import and verify compare the counts' sum (`total`) with the records read: counts
    // that add up past Int64.max count no file (and the sum would trap; found by fuzzing).
    let (partial, first) = trailer.users.addingReportingOverflow(trailer.messages)
    let (partial2, second) = partial.addingReportingOverflow(trailer.requests)
    let (_, third) = partial2.addingReportingOverflow(trailer.edits)
    guard !first && !second && !third else {
      throw RecordError("the trailer's counts add up to more than \(Int64.max)")
    }
    return trailer
  }

  // MARK: - Scanning

  struct Scanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var i = 0
    var atEnd: Bool { i >= bytes.count }
    var current: UInt8 { bytes[i] }
    mutating func skipSpace() {
      while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0D || bytes[i] == 0x0A { i += 1 }
    }
    mutating func expect(_ byte: UInt8, _ what: String) throws(RecordError) {
      skipSpace()
      guard i < bytes.count, bytes[i] == byte else {
        throw RecordError(
          i < bytes.count ? "expected \(what) at byte \(i + 1)" : "the line ends early (expected \(what))")
      }
      i += 1
    }
  }

  private func parseObject(_ s: inout Scanner) throws(RecordError) {
    try s.expect(UInt8(ascii: "{"), "'{': a record is a JSON object")
    s.skipSpace()
    if !s.atEnd && s.current == UInt8(ascii: "}") {
      s.i += 1
      return
    }
    while true {
      s.skipSpace()
      guard !s.atEnd, s.current == UInt8(ascii: "\"") else {
        throw RecordError("expected a field name at byte \(s.i + 1)")
      }
      let keyStart = scratch.count
      try parseString(&s)
      let key = Self.key(scratch, from: keyStart)
      let keyName = key == nil ? String(decoding: scratch[keyStart...], as: UTF8.self) : ""
      scratch.removeSubrange(keyStart...)
      try s.expect(UInt8(ascii: ":"), "':'")
      s.skipSpace()
      guard !s.atEnd else { throw RecordError("the line ends early") }
      let value: Value
      if key == .filters && s.current == UInt8(ascii: "{") {
        try parseFilters(&s)
        value = .object
      } else if key == .attachments && s.current == UInt8(ascii: "[") {
        try parseAttachments(&s)
        value = .array
      } else {
        do { value = try parseValue(&s, depth: 0) } catch {
          throw RecordError.field(key.map { "\($0)" } ?? keyName, error.description)
        }
      }
      if let key { values[key.rawValue] = value }
      s.skipSpace()
      guard !s.atEnd else { throw RecordError("the line ends early (expected ',' or '}')") }
      if s.current == UInt8(ascii: ",") {
        s.i += 1
        continue
      }
      if s.current == UInt8(ascii: "}") {
        s.i += 1
        return
      }
      throw RecordError("expected ',' or '}' at byte \(s.i + 1)")
    }
  }

  private static func key(_ scratch: [UInt8], from start: Int) -> Key? {
    let count = scratch.count - start
    for (index, name) in Key.names.enumerated() where name.count == count {
      if scratch[start...].elementsEqual(name) { return Key(rawValue: index) }
    }
    return nil
  }

  private func parseFilters(_ s: inout Scanner) throws(RecordError) {
    s.i += 1
    s.skipSpace()
    if !s.atEnd && s.current == UInt8(ascii: "}") {
      s.i += 1
      return
    }
    while true {
      s.skipSpace()
      let start = scratch.count
      guard !s.atEnd, s.current == UInt8(ascii: "\"") else { throw RecordError.field("filters", "expected a name") }
      try parseString(&s)
      let name = String(decoding: scratch[start...], as: UTF8.self)
      scratch.removeSubrange(start...)
      try s.expect(UInt8(ascii: ":"), "':'")
      s.skipSpace()
      guard !s.atEnd, s.current == UInt8(ascii: "\"") else {
        throw RecordError.field("filters", "values must be strings")
      }
      try parseString(&s)
      filters.append((name, String(decoding: scratch[start...], as: UTF8.self)))
      scratch.removeSubrange(start...)
      s.skipSpace()
      guard !s.atEnd else { throw RecordError("the line ends early") }
      s.i += 1
      if s.bytes[s.i - 1] == UInt8(ascii: "}") { return }
      guard s.bytes[s.i - 1] == UInt8(ascii: ",") else { throw RecordError.field("filters", "expected ',' or '}'") }
    }
  }

  /// Reads an `attachments` array into `attachments`, checking each field as it goes:
  /// errors name it as `attachments[0].sha256`.
  private func parseAttachments(_ s: inout Scanner) throws(RecordError) {
    attachments.removeAll(keepingCapacity: true)
    s.i += 1
    s.skipSpace()
    if !s.atEnd && s.current == UInt8(ascii: "]") {
      s.i += 1
      return
    }
    while true {
      s.skipSpace()
      let index = attachments.count
      guard index < maximumAttachments else {
        throw RecordError.field(
          "attachments", "more than \(maximumAttachments) (a message carries at most \(maximumAttachments))")
      }
      guard !s.atEnd, s.current == UInt8(ascii: "{") else {
        throw RecordError.field("attachments[\(index)]", "must be an object")
      }
      attachments.append(try parseAttachment(&s, index: index))
      s.skipSpace()
      guard !s.atEnd else { throw RecordError("the line ends early") }
      s.i += 1
      if s.bytes[s.i - 1] == UInt8(ascii: "]") { return }
      guard s.bytes[s.i - 1] == UInt8(ascii: ",") else {
        throw RecordError.field("attachments", "expected ',' or ']' at byte \(s.i)")
      }
    }
  }

  /// The fields of an attachment object.
  private enum AttachmentField: Int, CaseIterable {
    case sha256, mime, size, mediaId, width, height, durationMs, thumbnail
    static let names: [[UInt8]] = allCases.map { Array(String(describing: $0).utf8) }
  }

  /// Reads one attachment object (`s` at its `{`); unknown fields are skipped.
  private func parseAttachment(_ s: inout Scanner, index: Int) throws(RecordError) -> Attachment {
    let mark = scratch.count
    defer { scratch.removeSubrange(mark...) }
    var fields = [Value](repeating: .absent, count: AttachmentField.allCases.count)
    s.i += 1
    s.skipSpace()
    if !s.atEnd && s.current == UInt8(ascii: "}") {
      s.i += 1
    } else {
      while true {
        s.skipSpace()
        guard !s.atEnd, s.current == UInt8(ascii: "\"") else {
          throw RecordError.field("attachments[\(index)]", "expected a field name at byte \(s.i + 1)")
        }
        let keyStart = scratch.count
        try parseString(&s)
        let field = AttachmentField.names.firstIndex { scratch[keyStart...].elementsEqual($0) }
        let name = String(decoding: scratch[keyStart...], as: UTF8.self)
        scratch.removeSubrange(keyStart...)
        try s.expect(UInt8(ascii: ":"), "':'")
        s.skipSpace()
        guard !s.atEnd else { throw RecordError("the line ends early") }
        let valueStart = scratch.count
        let value: Value
        do { value = try parseValue(&s, depth: 1) } catch {
          throw RecordError.field("attachments[\(index)].\(name)", error.description)
        }
        if let field { fields[field] = value } else { scratch.removeSubrange(valueStart...) }
        s.skipSpace()
        guard !s.atEnd else { throw RecordError("the line ends early (expected ',' or '}')") }
        s.i += 1
        if s.bytes[s.i - 1] == UInt8(ascii: "}") { break }
        guard s.bytes[s.i - 1] == UInt8(ascii: ",") else {
          throw RecordError.field("attachments[\(index)]", "expected ',' or '}' at byte \(s.i)")
        }
      }
    }
    return try attachment(fields, index: index)
  }

  /// An attachment from its fields' values, each checked.
  private func attachment(_ fields: [Value], index: Int) throws(RecordError) -> Attachment {
    func name(_ field: AttachmentField) -> String { "attachments[\(index)].\(field)" }
    func bytes(_ field: AttachmentField, required: Bool) throws(RecordError) -> ArraySlice<UInt8>? {
      switch fields[field.rawValue] {
      case .string(let start, let count): return scratch[start..<(start + count)]
      case .absent where required, .null where required: throw RecordError.field(name(field), "missing")
      case .absent, .null: return nil
      default: throw RecordError.field(name(field), "must be a string")
      }
    }
    func integer(_ field: AttachmentField, required: Bool = false) throws(RecordError) -> Int64? {
      switch fields[field.rawValue] {
      case .int(let v) where v >= 0: return v
      case .int(let v): throw RecordError.field(name(field), "\(v) is negative")
      case .absent where required, .null where required: throw RecordError.field(name(field), "missing")
      case .absent, .null: return nil
      case .number: throw RecordError.field(name(field), "not an integer, or out of range")
      default: throw RecordError.field(name(field), "must be an integer")
      }
    }
    let hash = try bytes(.sha256, required: true)!
    guard hash.count == 64, hash.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
      let shown = hash.count <= 100 ? "'\(String(decoding: hash, as: UTF8.self))'" : "\(hash.count) bytes"
      throw RecordError.field(name(.sha256), "\(shown) is not a SHA-256 (64 lowercase hex digits)")
    }
    let mimeBytes = try bytes(.mime, required: true)!
    guard mimeBytes.count <= 255 else {
      throw RecordError.field(name(.mime), "\(mimeBytes.count) bytes is longer than the limit of 255")
    }
    guard let mime = String(validating: mimeBytes, as: UTF8.self), !mime.isEmpty else {
      throw RecordError.field(name(.mime), mimeBytes.isEmpty ? "empty" : "invalid UTF-8")
    }
    var thumbnail: [UInt8]?
    if let text = try bytes(.thumbnail, required: false) {
      guard text.count <= Base64.encodedCount(Thumbnail.maximumBytes) else {
        throw RecordError.field(
          name(.thumbnail), "about \(text.count / 4 * 3) bytes is longer than the limit of \(Thumbnail.maximumBytes)")
      }
      thumbnail = text.withUnsafeBufferPointer { Base64.decode($0) }
      guard let decoded = thumbnail else { throw RecordError.field(name(.thumbnail), "not valid base64") }
      guard decoded.count <= Thumbnail.maximumBytes else {
        throw RecordError.field(
          name(.thumbnail), "\(decoded.count) bytes is longer than the limit of \(Thumbnail.maximumBytes)")
      }
    }
    let relayID = try integer(.mediaId)
    if relayID == 0 { throw RecordError.field(name(.mediaId), "0 is out of range (ids are 1…9223372036854775807)") }
    return Attachment(
      sha256: String(decoding: hash, as: UTF8.self), mime: mime, size: try integer(.size, required: true)!,
      relayID: relayID, width: try integer(.width), height: try integer(.height),
      durationMs: try integer(.durationMs), thumbnail: thumbnail)
  }

  private func parseValue(_ s: inout Scanner, depth: Int) throws(RecordError) -> Value {
    guard depth < 32 else { throw RecordError("nested too deeply") }
    switch s.current {
    case UInt8(ascii: "\""):
      let start = scratch.count
      try parseString(&s)
      return .string(start: start, count: scratch.count - start)
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
      return try parseNumber(&s)
    case UInt8(ascii: "n"):
      try literal(&s, "null")
      return .null
    case UInt8(ascii: "t"):
      try literal(&s, "true")
      return .bool(true)
    case UInt8(ascii: "f"):
      try literal(&s, "false")
      return .bool(false)
    case UInt8(ascii: "{"), UInt8(ascii: "["):
      let isObject = s.current == UInt8(ascii: "{")
      let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
      s.i += 1
      s.skipSpace()
      if !s.atEnd && s.current == close {
        s.i += 1
        return isObject ? .object : .array
      }
      while true {
        s.skipSpace()
        let mark = scratch.count
        if isObject {
          guard !s.atEnd, s.current == UInt8(ascii: "\"") else {
            throw RecordError("expected a field name at byte \(s.i + 1)")
          }
          try parseString(&s)
          try s.expect(UInt8(ascii: ":"), "':'")
          s.skipSpace()
        }
        guard !s.atEnd else { throw RecordError("the line ends early") }
        _ = try parseValue(&s, depth: depth + 1)
        scratch.removeSubrange(mark...)
        s.skipSpace()
        guard !s.atEnd else { throw RecordError("the line ends early") }
        s.i += 1
        if s.bytes[s.i - 1] == close { return isObject ? .object : .array }
        guard s.bytes[s.i - 1] == UInt8(ascii: ",") else { throw RecordError("expected ',' at byte \(s.i)") }
      }
    default:
      throw RecordError("unexpected character at byte \(s.i + 1)")
    }
  }

  private func literal(_ s: inout Scanner, _ word: StaticString) throws(RecordError) {
    let n = word.utf8CodeUnitCount
    guard s.i + n <= s.bytes.count else { throw RecordError("the line ends early") }
    for k in 0..<n where s.bytes[s.i + k] != word.utf8Start[k] {
      throw RecordError("unexpected character at byte \(s.i + k + 1)")
    }
    s.i += n
  }

  private func parseNumber(_ s: inout Scanner) throws(RecordError) -> Value {
    let negative = s.current == UInt8(ascii: "-")
    if negative { s.i += 1 }
    if !s.atEnd, s.current == 0x30, s.i + 1 < s.bytes.count, s.bytes[s.i + 1] >= 0x30 && s.bytes[s.i + 1] <= 0x39 {
      throw RecordError("a number may not start with 0 (JSON)")
    }
    var magnitude: UInt64 = 0
    var digits = 0
    var overflow = false
    while !s.atEnd, s.current >= 0x30 && s.current <= 0x39 {
      let (m1, o1) = magnitude.multipliedReportingOverflow(by: 10)
      let (m2, o2) = m1.addingReportingOverflow(UInt64(s.current - 0x30))
      overflow = overflow || o1 || o2
      magnitude = m2
      digits += 1
      s.i += 1
    }
    guard digits > 0 else { throw RecordError("a number needs digits") }
    var isInteger = true
    if !s.atEnd && (s.current == UInt8(ascii: ".") || s.current == UInt8(ascii: "e") || s.current == UInt8(ascii: "E"))
    {
      isInteger = false
      while !s.atEnd,
        (s.current >= 0x30 && s.current <= 0x39) || s.current == UInt8(ascii: ".") || s.current == UInt8(ascii: "e")
          || s.current == UInt8(ascii: "E") || s.current == UInt8(ascii: "+") || s.current == UInt8(ascii: "-")
      { s.i += 1 }
    }
    guard isInteger, !overflow else { return .number }
    if negative {
      guard magnitude <= UInt64(Int64.max) + 1 else { return .number }
      return .int(magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude))
    }
    guard magnitude <= UInt64(Int64.max) else { return .number }
    return .int(Int64(magnitude))
  }

  /// Appends the unescaped bytes of the string at `s` to `scratch` through the shared
  /// `JSONStringUnescaper`; UTF-8 is checked when a field is read as text (see `text`).
  private func parseString(_ s: inout Scanner) throws(RecordError) {
    s.i += 1  // opening quote
    do {
      try JSONStringUnescaper.unescape(s.bytes, from: &s.i, into: &scratch)
    } catch {
      throw RecordError(error.description)
    }
  }

  /// The offset of the first byte that breaks UTF-8 (RFC 3629: no overlongs, no
  /// surrogates, nothing above U+10FFFF), or nil when the bytes are valid.
  static func invalidUTF8Offset(_ bytes: [UInt8], from start: Int) -> Int? {
    var i = start
    let n = bytes.count
    while i < n {
      let b = bytes[i]
      if b < 0x80 {
        i += 1
        continue
      }
      let need: Int
      var lower: UInt8 = 0x80
      var upper: UInt8 = 0xBF
      switch b {
      case 0xC2...0xDF: need = 1
      case 0xE0:
        need = 2
        lower = 0xA0
      case 0xE1...0xEC, 0xEE...0xEF: need = 2
      case 0xED:
        need = 2
        upper = 0x9F
      case 0xF0:
        need = 3
        lower = 0x90
      case 0xF1...0xF3: need = 3
      case 0xF4:
        need = 3
        upper = 0x8F
      default: return i
      }
      guard i + need < n else { return i }
      let second = bytes[i + 1]
      guard second >= lower && second <= upper else { return i }
      for k in 2...max(2, need) where k <= need {
        guard bytes[i + k] & 0xC0 == 0x80 else { return i }
      }
      i += need + 1
    }
    return nil
  }
}

@available(*, unavailable)
extension RecordParser: Sendable {}
