import ChatProtocol
import ChatStore

// The relay's hand-written renderings of the protocol's types, for its hot paths (every
// POST renders a message, every delivery a status update) and `chat-relay --json`:
// `JSONValue` renders in about a fifth of JSONEncoder's time, and the per-message shapes
// go through `JSONObjectWriter`, which skips JSONValue's dictionary and its sort (7% of
// the relay's CPU under a sender's backlog, decision 0012). The field names and the
// bytes are the Codable types' (ChatProtocol); RelayWireTests checks each rendering
// against `WireJSON.encode` of the same value.

extension RelayMessage {
  /// `{attachments?, content, createdAt, deletedAt?, editedAt?, edits?, fromDeviceId?,
  /// fromUserId, messageId, previousId?, requestId?, status, toUserId, version?}`: the
  /// optional fields only when set.
  public var json: [UInt8] {
    var object = JSONObjectWriter()
    if let attachments { object.raw("attachments", MessagesPage.array(attachments.map(\.json))) }
    object.string("content", content)
    object.string("createdAt", createdAt)
    if let deletedAt { object.string("deletedAt", deletedAt) }
    if let editedAt { object.string("editedAt", editedAt) }
    if let edits { object.raw("edits", MessagesPage.array(edits.map(\.json))) }
    if let fromDeviceId { object.int("fromDeviceId", fromDeviceId) }
    object.int("fromUserId", fromUserId)
    object.int("messageId", messageId)
    if let previousId { object.int("previousId", previousId) }
    if let requestId { object.int("requestId", requestId) }
    object.string("status", status)
    object.int("toUserId", toUserId)
    if let version { object.int("version", version) }
    return object.closed
  }
}

extension RelayAttachment {
  /// `{durationMs?, height?, mediaId, mime, sha256, size, thumbnail?, width?}`.
  public var json: [UInt8] {
    var object = JSONObjectWriter()
    if let durationMs { object.int("durationMs", durationMs) }
    if let height { object.int("height", height) }
    object.int("mediaId", mediaId)
    object.string("mime", mime)
    object.string("sha256", sha256)
    object.int("size", size)
    if let thumbnail { object.string("thumbnail", thumbnail) }
    if let width { object.int("width", width) }
    return object.closed
  }
}

extension RelayMessageVersion {
  /// `{content, editedAt, version}`.
  public var json: [UInt8] {
    var object = JSONObjectWriter()
    object.string("content", content)
    object.string("editedAt", editedAt)
    object.int("version", version)
    return object.closed
  }
}

extension RelayUser {
  /// `{id, name, avatarUrl, lastConnectedAt}` (nulls kept: a client stores them as such).
  public var json: JSONValue {
    .object([
      "id": .int(id), "name": .string(name), "avatarUrl": avatarURL.map { .string($0) } ?? .null,
      "lastConnectedAt": lastConnectedAt.map { .string($0) } ?? .null,
    ])
  }
}

extension StatusUpdate {
  /// `{at, content?, conversationId, messageId, sequence, type?, version?}`: the event
  /// payload and the sync entry.
  public var json: [UInt8] {
    var object = JSONObjectWriter()
    object.string("at", at)
    if let content { object.string("content", content) }
    object.int("conversationId", conversationId)
    object.int("messageId", messageId)
    object.int("sequence", sequence)
    if let type { object.string("type", type.rawValue) }
    if let version { object.int("version", version) }
    return object.closed
  }
}

extension MessagesPage {
  /// `{cursor?, hasMore, messages, statusUpdates}`: the catch-up page, the relay's largest answer.
  public var json: [UInt8] {
    var object = JSONObjectWriter()
    if let cursor { object.int("cursor", cursor) }
    object.bool("hasMore", hasMore)
    object.raw("messages", Self.array(messages.map(\.json)))
    object.raw("statusUpdates", Self.array((statusUpdates ?? []).map(\.json)))
    return object.closed
  }

  /// `[a,b,…]` of elements already rendered.
  static func array(_ elements: [[UInt8]]) -> [UInt8] {
    var out: [UInt8] = [UInt8(ascii: "[")]
    out.reserveCapacity(elements.reduce(2) { $0 + $1.count + 1 })
    for (index, element) in elements.enumerated() {
      if index > 0 { out.append(UInt8(ascii: ",")) }
      out.append(contentsOf: element)
    }
    out.append(UInt8(ascii: "]"))
    return out
  }
}

extension PushRecord {
  /// `{id, toUserId, messageId, unread, createdAt}`: ids and the badge count, never content.
  public var json: JSONValue {
    .object([
      "id": .int(id), "toUserId": .int(toUserId), "messageId": .int(messageId), "unread": .int(unread),
      "createdAt": .string(createdAt),
    ])
  }
}
