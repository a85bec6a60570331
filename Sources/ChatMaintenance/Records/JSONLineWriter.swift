import ChatStore

/// Builds NDJSON lines into one reusable byte buffer, escaping strings per RFC 8259,
/// and hands full chunks to a `ByteSink`. No allocation per line.
///
/// See <https://www.rfc-editor.org/rfc/rfc8259#section-7>.
public struct JSONLineWriter {
  /// The bytes not yet handed to the sink.
  public private(set) var buffer: [UInt8] = []
  private var needsComma = false
  /// Bytes at which the buffer is handed to the sink.
  static let flushThreshold = 1 << 18

  public init() { buffer.reserveCapacity(Self.flushThreshold + 64 * 1024) }

  // MARK: - Objects

  /// Starts `{"type":"<type>"`.
  public mutating func begin(type: StaticString) {
    append("{\"type\":\"")
    type.withUTF8Buffer { buffer.append(contentsOf: $0) }
    buffer.append(UInt8(ascii: "\""))
    needsComma = true
  }

  /// Ends the object and the line.
  public mutating func end() {
    buffer.append(UInt8(ascii: "}"))
    buffer.append(UInt8(ascii: "\n"))
    needsComma = false
  }

  private mutating func key(_ name: StaticString) {
    if needsComma { buffer.append(UInt8(ascii: ",")) }
    needsComma = true
    buffer.append(UInt8(ascii: "\""))
    name.withUTF8Buffer { buffer.append(contentsOf: $0) }
    buffer.append(UInt8(ascii: "\""))
    buffer.append(UInt8(ascii: ":"))
  }

  private mutating func append(_ text: StaticString) { text.withUTF8Buffer { buffer.append(contentsOf: $0) } }

  // MARK: - Fields

  /// `"name":123`
  public mutating func field(_ name: StaticString, _ value: Int64) {
    key(name)
    appendInteger(value)
  }

  /// `"name":123` or `"name":null`.
  public mutating func field(_ name: StaticString, _ value: Int64?) {
    key(name)
    if let value { appendInteger(value) } else { append("null") }
  }

  /// `"name":"escaped text"`
  public mutating func field(_ name: StaticString, _ value: String) {
    key(name)
    var value = value
    value.withUTF8 { appendString($0) }
  }

  /// `"name":"escaped text"` or `"name":null`.
  public mutating func field(_ name: StaticString, _ value: String?) {
    if let value {
      field(name, value)
    } else {
      key(name)
      append("null")
    }
  }

  /// `"name":"escaped text"` from UTF-8 bytes (a column read without making a String).
  public mutating func field(_ name: StaticString, utf8 bytes: UnsafeBufferPointer<UInt8>) {
    key(name)
    appendString(bytes)
  }

  /// `"name":null`
  public mutating func nullField(_ name: StaticString) {
    key(name)
    append("null")
  }

  /// `"name":{"k":"v",…}` with keys in order.
  public mutating func field(_ name: StaticString, object: [(String, String)]) {
    key(name)
    buffer.append(UInt8(ascii: "{"))
    for (index, (k, v)) in object.enumerated() {
      if index > 0 { buffer.append(UInt8(ascii: ",")) }
      var k = k
      var v = v
      k.withUTF8 { appendString($0) }
      buffer.append(UInt8(ascii: ":"))
      v.withUTF8 { appendString($0) }
    }
    buffer.append(UInt8(ascii: "}"))
  }

  /// `"name":"<base64>"`, encoded straight into the buffer (a thumbnail, a media piece).
  public mutating func field(_ name: StaticString, base64 bytes: UnsafeRawBufferPointer) {
    key(name)
    buffer.append(UInt8(ascii: "\""))
    Base64.encode(bytes, into: &buffer)
    buffer.append(UInt8(ascii: "\""))
  }

  /// `"attachments":[{"sha256":…,"mime":…,"size":…},…]` (format 3): each attachment's
  /// metadata and thumbnail, a field left out when unknown; nothing for none.
  public mutating func field(_ name: StaticString, attachments: [Attachment]) {
    guard !attachments.isEmpty else { return }
    key(name)
    buffer.append(UInt8(ascii: "["))
    for (index, attachment) in attachments.enumerated() {
      if index > 0 { buffer.append(UInt8(ascii: ",")) }
      buffer.append(UInt8(ascii: "{"))
      needsComma = false
      field("sha256", attachment.sha256)
      field("mime", attachment.mime)
      field("size", attachment.size)
      if let relayID = attachment.relayID { field("mediaId", relayID) }
      if let width = attachment.width { field("width", width) }
      if let height = attachment.height { field("height", height) }
      if let durationMs = attachment.durationMs { field("durationMs", durationMs) }
      if let thumbnail = attachment.thumbnail { thumbnail.withUnsafeBytes { field("thumbnail", base64: $0) } }
      buffer.append(UInt8(ascii: "}"))
    }
    buffer.append(UInt8(ascii: "]"))
    needsComma = true
  }

  // MARK: - Scalars

  /// "00", "01", … "99": two digits per division when formatting integers.
  private static let digitPairs: [UInt8] = {
    var pairs: [UInt8] = []
    for n in 0..<100 {
      pairs.append(UInt8(48 + n / 10))
      pairs.append(UInt8(48 + n % 10))
    }
    return pairs
  }()

  private mutating func appendInteger(_ value: Int64) {
    var magnitude = value.magnitude
    // Room for 20 digits on the stack, filled from the end.
    var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
    withUnsafeMutableBytes(of: &digits) { raw in
      var at = 24
      Self.digitPairs.withUnsafeBufferPointer { pairs in
        while magnitude >= 100 {
          let pair = Int(magnitude % 100) * 2
          magnitude /= 100
          at -= 2
          raw[at] = pairs[pair]
          raw[at + 1] = pairs[pair + 1]
        }
        if magnitude >= 10 {
          let pair = Int(magnitude) * 2
          at -= 2
          raw[at] = pairs[pair]
          raw[at + 1] = pairs[pair + 1]
        } else {
          at -= 1
          raw[at] = UInt8(48 + magnitude)
        }
      }
      if value < 0 { buffer.append(UInt8(ascii: "-")) }
      buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[at..<24]))
    }
  }

  private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

  /// The index of the next byte at or after `start` that JSON must escape (a control
  /// character, `"` or `\`), or `count`. Tests eight bytes at a time: most text has
  /// none, and this loop is most of an export's own CPU time.
  static func nextSpecial(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    var i = start
    if let base = bytes.baseAddress {
      let raw = UnsafeRawPointer(base)
      while i + 8 <= bytes.count {
        let word = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
        let control = (word &- 0x20 &* ones) & ~word & highs
        let quote = word ^ (0x22 &* ones)
        let backslash = word ^ (0x5C &* ones)
        let found = control | ((quote &- ones) & ~quote & highs) | ((backslash &- ones) & ~backslash & highs)
        if found != 0 { break }
        i += 8
      }
    }
    while i < bytes.count {
      let byte = bytes[i]
      if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return i }
      i += 1
    }
    return i
  }

  /// Appends a quoted JSON string; the bytes must be valid UTF-8 (SQLite text and
  /// Swift strings are), which passes through unescaped.
  mutating func appendString(_ bytes: UnsafeBufferPointer<UInt8>) {
    buffer.append(UInt8(ascii: "\""))
    var start = 0
    var i = 0
    while true {
      i = Self.nextSpecial(bytes, from: i)
      guard i < bytes.count else { break }
      let byte = bytes[i]
      if start < i { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i])) }
      buffer.append(UInt8(ascii: "\\"))
      switch byte {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"): buffer.append(byte)
      case 0x0A: buffer.append(UInt8(ascii: "n"))
      case 0x0D: buffer.append(UInt8(ascii: "r"))
      case 0x09: buffer.append(UInt8(ascii: "t"))
      case 0x08: buffer.append(UInt8(ascii: "b"))
      case 0x0C: buffer.append(UInt8(ascii: "f"))
      default:
        buffer.append(contentsOf: [UInt8(ascii: "u"), 0x30, 0x30, Self.hex[Int(byte >> 4)], Self.hex[Int(byte & 0xF)]])
      }
      start = i + 1
      i += 1
    }
    if start < bytes.count { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...])) }
    buffer.append(UInt8(ascii: "\""))
  }

  // MARK: - Output

  /// Hands the buffer to `sink` once it holds enough to be worth a write.
  public mutating func flushIfFull(to sink: some ByteSink) throws {
    if buffer.count >= Self.flushThreshold { try flush(to: sink) }
  }

  /// Hands everything buffered to `sink`.
  public mutating func flush(to sink: some ByteSink) throws {
    guard !buffer.isEmpty else { return }
    try buffer.withUnsafeBytes { try sink.write($0) }
    buffer.removeAll(keepingCapacity: true)
  }
}

// MARK: - Records

extension JSONLineWriter {
  /// Appends one record as a line.
  public mutating func write(_ record: Record) {
    switch record {
    case .user(let u):
      begin(type: "user")
      field("id", u.id)
      field("name", u.name)
      field("avatarUrl", u.avatarURL)
      field("lastConnectedAt", u.lastConnectedAt)
      end()
    case .message(let m):
      begin(type: "message")
      field("id", m.id)
      field("fromUserId", m.fromUserID)
      field("toUserId", m.toUserID)
      field("status", m.status.rawValue)
      field("createdAt", m.createdAt)
      if let requestID = m.requestID { field("requestId", requestID) }
      // As the exporter writes them: an edit's version and time, a tombstone's deletion.
      if m.version > 0 { field("version", m.version) }
      if let editedAt = m.editedAt { field("editedAt", editedAt) }
      if let deletedAt = m.deletedAt { field("deletedAt", deletedAt) }
      field("content", m.content)
      field("attachments", attachments: m.attachments)
      end()
    case .request(let r):
      begin(type: "request")
      field("requestId", r.requestID)
      field("toUserId", r.toUserID)
      field("content", r.content)
      field("status", r.status.rawValue)
      field("createdAt", r.createdAt)
      field("lastModifiedAt", r.lastModifiedAt)
      field("lastSentAt", r.lastSentAt)
      field("failCount", Int64(r.failCount))
      field("nextAttemptAt", r.nextAttemptAt)
      field("failReason", r.failReason)
      end()
    case .edit(let messageID, let v):
      begin(type: "edit")
      field("messageId", messageID)
      field("version", v.version)
      field("editedAt", v.editedAt)
      field("content", v.content)
      end()
    }
  }

  /// Appends the header line.
  public mutating func write(_ header: HistoryHeader) {
    begin(type: "header")
    field("format", HistoryHeader.formatName)
    field("version", Int64(header.version))
    field("schemaVersion", Int64(header.schemaVersion))
    field("userId", header.userID)
    field("exportedAt", header.exportedAt)
    field("filters", object: header.filters.sorted { $0.key < $1.key })
    end()
  }

  /// Appends a `media` line (format 3): a piece of a file's bytes, in base64.
  public mutating func writeMedia(sha256: String, size: Int64, offset: Int64, data: UnsafeRawBufferPointer) {
    begin(type: "media")
    field("sha256", sha256)
    field("size", size)
    field("offset", offset)
    field("data", base64: data)
    end()
  }

  /// Appends the trailer line.
  public mutating func write(_ trailer: HistoryTrailer) {
    begin(type: "trailer")
    field("users", trailer.users)
    field("messages", trailer.messages)
    field("requests", trailer.requests)
    if trailer.edits > 0 { field("edits", trailer.edits) }
    if let media = trailer.media { field("media", media) }
    if let mediaBytes = trailer.mediaBytes { field("mediaBytes", mediaBytes) }
    end()
  }
}
