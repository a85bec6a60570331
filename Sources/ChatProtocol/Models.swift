// MARK: - The message, the user and the status update of `docs/protocol.md`

/// A message as the relay hands it out: the HTTP answers' `message` and the
/// `new_message` event's payload.
///
/// `{"messageId": 10916218899464192, "fromUserId": 1, "toUserId": 2, "content": "Hi 👋",
/// "status": "SYNCED", "createdAt": "2026-01-31T12:00:00.000Z"}`
public struct RelayMessage: Sendable, Hashable, Codable {
  /// The relay's time-sortable id (`ChatStore.MessageID`).
  public var messageId: Int64
  /// The sender.
  public var fromUserId: Int64
  /// The recipient.
  public var toUserId: Int64
  /// The text, 1 to 65,536 UTF-8 bytes.
  public var content: String
  /// What the relay knows when it hands the message out: `SYNCED` in events and answers;
  /// in a catch-up page also `DELIVERED` (a device of the recipient stored it) or `READ`
  /// (the recipient read it on some device), so a device fetching history starts with
  /// the statuses the user's other devices have. Absent on the wire, it is `SYNCED`.
  public var status: String
  /// When the sender wrote it, as the sender's client said (ISO 8601).
  public var createdAt: String
  /// The sender's device, and that device's `requestId` for it: given only to the
  /// sender's own devices (the one that sent it matches the message to its outbox;
  /// the others store it as sent from elsewhere). Nil for the recipient.
  public var fromDeviceId: Int64?
  /// See ``fromDeviceId``.
  public var requestId: Int64?
  /// In a `new_message` event: the id of the message before it in the receiving user's
  /// log (0 before its first; messages that left the relay still count). A device whose
  /// cursor is that id moves its cursor to this message; any other sees a gap, which its
  /// next catch-up fills.
  public var previousId: Int64?
  /// The version of `content`: absent (0) as sent, one more for each edit.
  public var version: Int64?
  /// When the edit that made `content` was made; absent for the text as sent.
  public var editedAt: String?
  /// When the sender deleted it for everyone: `content` is then "" (a tombstone).
  public var deletedAt: String?
  /// In a catch-up page, for an edited message: the versions its `content` replaced,
  /// oldest first (version 0 is the text as sent), so a device that first sees the
  /// message after its edits still has its edit history. Absent otherwise.
  public var edits: [RelayMessageVersion]?
  /// The media it carries, in order, each with its inline thumbnail; absent for text only.
  public var attachments: [RelayAttachment]?

  /// The status the relay gives a message it has just accepted.
  public static let syncedStatus = "SYNCED"

  /// A message; the relay's status unless told otherwise.
  public init(
    messageId: Int64, fromUserId: Int64, toUserId: Int64, content: String, status: String = RelayMessage.syncedStatus,
    createdAt: String, fromDeviceId: Int64? = nil, requestId: Int64? = nil, previousId: Int64? = nil,
    version: Int64? = nil, editedAt: String? = nil, deletedAt: String? = nil, edits: [RelayMessageVersion]? = nil,
    attachments: [RelayAttachment]? = nil
  ) {
    self.messageId = messageId
    self.fromUserId = fromUserId
    self.toUserId = toUserId
    self.content = content
    self.status = status
    self.createdAt = createdAt
    self.fromDeviceId = fromDeviceId
    self.requestId = requestId
    self.previousId = previousId
    self.version = version
    self.editedAt = editedAt
    self.deletedAt = deletedAt
    self.edits = edits
    self.attachments = attachments
  }

  private enum CodingKeys: String, CodingKey {
    case messageId, fromUserId, toUserId, content, status, createdAt, fromDeviceId, requestId, previousId, version,
      editedAt, deletedAt, edits, attachments
  }

  /// Decodes a message; a missing `status` is `SYNCED`.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    messageId = try container.decode(Int64.self, forKey: .messageId)
    fromUserId = try container.decode(Int64.self, forKey: .fromUserId)
    toUserId = try container.decode(Int64.self, forKey: .toUserId)
    content = try container.decode(String.self, forKey: .content)
    status = try container.decodeIfPresent(String.self, forKey: .status) ?? Self.syncedStatus
    createdAt = try container.decode(String.self, forKey: .createdAt)
    fromDeviceId = try container.decodeIfPresent(Int64.self, forKey: .fromDeviceId)
    requestId = try container.decodeIfPresent(Int64.self, forKey: .requestId)
    previousId = try container.decodeIfPresent(Int64.self, forKey: .previousId)
    version = try container.decodeIfPresent(Int64.self, forKey: .version)
    editedAt = try container.decodeIfPresent(String.self, forKey: .editedAt)
    deletedAt = try container.decodeIfPresent(String.self, forKey: .deletedAt)
    edits = try container.decodeIfPresent([RelayMessageVersion].self, forKey: .edits)
    attachments = try container.decodeIfPresent([RelayAttachment].self, forKey: .attachments)
  }
}

/// A version of a message's text that an edit replaced: an entry of
/// ``RelayMessage/edits``.
///
/// `{"content": "Hi", "editedAt": "2026-01-31T12:00:00.000Z", "version": 0}`
public struct RelayMessageVersion: Sendable, Hashable, Codable {
  /// The version's number: 0 for the text as sent, one more for each edit.
  public var version: Int64
  /// Its text.
  public var content: String
  /// When it was made: the message's `createdAt` for version 0.
  public var editedAt: String

  public init(version: Int64, content: String, editedAt: String) {
    self.version = version
    self.content = content
    self.editedAt = editedAt
  }
}

/// A user's profile as contacts see it: `GET /v2/users/{id}`, the list form's entries,
/// `GET /v2/me`'s `user`.
///
/// `{"id": 2, "name": "Bob", "avatarUrl": null, "lastConnectedAt": "2026-01-31T11:59:00.000Z"}`:
/// the field is `avatarUrl` on the wire; nulls are written, not left out (a client
/// stores them as such).
public struct RelayUser: Sendable, Hashable, Codable {
  /// The user's id: positive, chosen by whoever adds the user.
  public var id: Int64
  /// The display name.
  public var name: String
  /// The avatar's URL, if any.
  public var avatarURL: String?
  /// When the user last connected (ISO 8601), or nil.
  public var lastConnectedAt: String?

  /// A profile.
  public init(id: Int64, name: String, avatarURL: String?, lastConnectedAt: String?) {
    self.id = id
    self.name = name
    self.avatarURL = avatarURL
    self.lastConnectedAt = lastConnectedAt
  }

  private enum CodingKeys: String, CodingKey {
    case id, name
    case avatarURL = "avatarUrl"
    case lastConnectedAt
  }

  /// Writes every field, nulls included.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(id, forKey: .id)
    try container.encode(name, forKey: .name)
    try container.encode(avatarURL, forKey: .avatarURL)
    try container.encode(lastConnectedAt, forKey: .lastConnectedAt)
  }
}

/// A delivery or read update for one of the caller's sent messages: an entry of
/// `GET /v2/messages`' `statusUpdates`, and the payload of the `message_delivered` and
/// `message_read` events.
///
/// `{"sequence": 12, "type": "message_delivered", "messageId": 10916218899464192,
/// "conversationId": 2, "at": "2026-01-31T12:00:01.000Z"}`
public struct StatusUpdate: Sendable, Hashable, Codable {
  /// What happened to the caller's message(s).
  public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
    /// The recipient acknowledged `messageId`: the relay no longer holds it.
    case messageDelivered = "message_delivered"
    /// The recipient read every message of the conversation up to `messageId`.
    case messageRead = "message_read"
    /// The caller read the conversation with `conversationId` up to `messageId` on one of
    /// their devices: every device of theirs counts those messages as read.
    case conversationRead = "conversation_read"
    /// The sender edited `messageId` (in the conversation with `conversationId`): its text
    /// is now `content`, version `version`, made at `at`.
    case messageEdited = "message_edited"
    /// The sender deleted `messageId` for everyone at `at`: every device erases its text.
    case messageDeleted = "message_deleted"
  }

  /// The update's place in the caller's stream (the `lastSyncedUpdate` cursor).
  public var sequence: Int64
  /// What happened. The relay always says; a decoder leaves it nil when it is absent or
  /// unknown (an event's own `type` says it too).
  public var type: Kind?
  /// The message delivered, or the highest message read.
  public var messageId: Int64
  /// The other user of the conversation, from the receiver's side.
  public var conversationId: Int64
  /// When the relay recorded it (ISO 8601 UTC with milliseconds).
  public var at: String
  /// `message_edited`: the version the edit made.
  public var version: Int64?
  /// `message_edited`: the text of that version; absent once the message was deleted for
  /// everyone (a `message_deleted` update follows it).
  public var content: String?

  /// An update.
  public init(
    sequence: Int64, type: Kind?, messageId: Int64, conversationId: Int64, at: String, version: Int64? = nil,
    content: String? = nil
  ) {
    self.sequence = sequence
    self.type = type
    self.messageId = messageId
    self.conversationId = conversationId
    self.at = at
    self.version = version
    self.content = content
  }

  private enum CodingKeys: String, CodingKey {
    case sequence, type, messageId, conversationId, at, version, content
  }

  /// Decodes an update; an unknown `type` (a newer relay's) is nil rather than an error.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    sequence = try container.decode(Int64.self, forKey: .sequence)
    type = try container.decodeIfPresent(String.self, forKey: .type).flatMap(Kind.init(rawValue:))
    messageId = try container.decode(Int64.self, forKey: .messageId)
    conversationId = try container.decode(Int64.self, forKey: .conversationId)
    at = try container.decode(String.self, forKey: .at)
    version = try container.decodeIfPresent(Int64.self, forKey: .version)
    content = try container.decodeIfPresent(String.self, forKey: .content)
  }
}

/// A contact's presence and typing: the `contact_status_update` event's payload.
///
/// `{"userId": 2, "online": true, "lastSeenAt": null, "typing": false, "typingExpiresInMs": 0}`
public struct ContactStatus: Sendable, Hashable, Codable {
  /// The contact.
  public var userId: Int64
  /// Whether the contact has a socket open.
  public var online: Bool
  /// When the contact last connected or left (ISO 8601), or nil; written as null.
  public var lastSeenAt: String?
  /// Whether the contact is typing to the receiver (not stored by the relay).
  public var typing: Bool?
  /// How long the typing signal holds unless renewed (``typingWindowMilliseconds``).
  public var typingExpiresInMs: Int64?

  /// How long a typing signal holds at the contact unless renewed: the relay's
  /// `typingExpiresInMs`, and the time `chat-sync typing` holds a socket of its own.
  public static let typingWindowMilliseconds: Int64 = 5_000

  /// A status.
  public init(userId: Int64, online: Bool, lastSeenAt: String?, typing: Bool?, typingExpiresInMs: Int64?) {
    self.userId = userId
    self.online = online
    self.lastSeenAt = lastSeenAt
    self.typing = typing
    self.typingExpiresInMs = typingExpiresInMs
  }

  private enum CodingKeys: String, CodingKey {
    case userId, online, lastSeenAt, typing, typingExpiresInMs
  }

  /// Writes `lastSeenAt` even when null; `typing` and its expiry when known.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(userId, forKey: .userId)
    try container.encode(online, forKey: .online)
    try container.encode(lastSeenAt, forKey: .lastSeenAt)
    try container.encodeIfPresent(typing, forKey: .typing)
    try container.encodeIfPresent(typingExpiresInMs, forKey: .typingExpiresInMs)
  }
}

/// A media a message carries (`docs/protocol.md`, "Media"): the relay's media id, what
/// the upload said of it, and a small thumbnail inline, so the recipient shows the
/// message at once and fetches the media (`GET /v2/media/{id}`) when it wants it.
public struct RelayAttachment: Sendable, Hashable, Codable {
  /// The media's id on the relay (`Chat-Media-Id` of its upload).
  public var mediaId: Int64
  /// Its media type, as its upload declared it.
  public var mime: String
  /// Its size in bytes.
  public var size: Int64
  /// Its SHA-256, 64 lowercase hex digits.
  public var sha256: String
  /// Pixels, for images and video, when the sender knew them.
  public var width: Int64?
  public var height: Int64?
  /// Milliseconds, for audio and video, when the sender knew them.
  public var durationMs: Int64?
  /// A JPEG or WebP of at most 320 px a side and 20 KiB, base64; absent when there is none.
  public var thumbnail: String?

  public init(
    mediaId: Int64, mime: String, size: Int64, sha256: String, width: Int64? = nil, height: Int64? = nil,
    durationMs: Int64? = nil, thumbnail: String? = nil
  ) {
    self.mediaId = mediaId
    self.mime = mime
    self.size = size
    self.sha256 = sha256
    self.width = width
    self.height = height
    self.durationMs = durationMs
    self.thumbnail = thumbnail
  }

  /// The largest thumbnail, in bytes (before base64).
  public static let maximumThumbnailBytes = 20 * 1024
  /// The most attachments one message carries.
  public static let maximumCount = 10
}
