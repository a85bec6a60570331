// MARK: - Bodies of the HTTP requests and answers of `docs/protocol.md`

/// The body of `POST /v2/messages`.
///
/// `{"requestId": 7, "toUserId": 2, "content": "Hi 👋", "createdAt": "2026-01-31T12:00:00.000Z"}`
public struct MessagePost: Sendable, Hashable, Codable {
  /// The sender's idempotency key, a positive integer unique per sender.
  public var requestId: Int64
  /// The recipient.
  public var toUserId: Int64
  /// The text, 1 to 65,536 bytes of UTF-8.
  public var content: String
  /// When the user wrote it (ISO 8601); the relay's time when nil.
  public var createdAt: String?
  /// Media the sender uploaded (or received), by id, with what the relay cannot know
  /// (size in pixels, duration, thumbnail); the relay adds mime, size and sha256.
  public var attachments: [AttachmentPost]?

  /// A message to send.
  public init(
    requestId: Int64, toUserId: Int64, content: String, createdAt: String?, attachments: [AttachmentPost]? = nil
  ) {
    self.requestId = requestId
    self.toUserId = toUserId
    self.content = content
    self.createdAt = createdAt
    self.attachments = attachments
  }
}

/// One attachment of a posted message (see ``RelayAttachment``).
public struct AttachmentPost: Sendable, Hashable, Codable {
  public var mediaId: Int64
  public var width: Int64?
  public var height: Int64?
  public var durationMs: Int64?
  /// Base64 of a JPEG or WebP of at most ``RelayAttachment/maximumThumbnailBytes``.
  public var thumbnail: String?

  public init(
    mediaId: Int64, width: Int64? = nil, height: Int64? = nil, durationMs: Int64? = nil, thumbnail: String? = nil
  ) {
    self.mediaId = mediaId
    self.width = width
    self.height = height
    self.durationMs = durationMs
    self.thumbnail = thumbnail
  }
}

/// The `201 Created` answer to `POST /v2/messages`: the message and the request it answers.
public struct MessagePostAnswer: Sendable, Hashable, Codable {
  /// The message as the relay stored it.
  public var message: RelayMessage
  /// The `requestId` of the body; optional to a client (older relays left it out).
  public var fromMessageRequestId: Int64?

  /// An answer.
  public init(message: RelayMessage, fromMessageRequestId: Int64?) {
    self.message = message
    self.fromMessageRequestId = fromMessageRequestId
  }
}

/// The body of `POST /v2/messages/batch`: several messages of one device, in the order
/// they are to be stored (at most ``maximumMessages``, in a body of at most
/// ``maximumBodyBytes``).
///
/// `{"messages": [{"requestId": 7, "toUserId": 2, "content": "Hi"}, {"requestId": 8, "toUserId": 2, "content": "there"}]}`
public struct MessageBatchPost: Sendable, Hashable, Codable {
  /// The messages, each as `POST /v2/messages` takes it.
  public var messages: [MessagePost]
  /// The `requestId` of this device's message that must be on the relay before the batch
  /// is tried (the last of the batch sent before it and not answered yet); without it the
  /// relay answers `409 out_of_order` and tries none.
  public var after: Int64?

  /// A batch.
  public init(messages: [MessagePost], after: Int64? = nil) {
    self.messages = messages
    self.after = after
  }

  /// The most messages a batch takes.
  public static let maximumMessages = 500
  /// The largest request body the relay reads (any request); a larger one gets `413`.
  public static let maximumBodyBytes = 1 << 20

  /// At least the bytes `message` adds to a batch's body: its fields, the separators,
  /// and its text with every byte JSON may escape counted as escaped (a control character
  /// as `\u001f`, a quote or backslash with its backslash). A sender that keeps the sum
  /// under ``maximumBodyBytes`` never gets `413`: 64 KiB of the worst text is 384 KiB.
  public static func bytesBound(of message: MessagePost) -> Int {
    var bytes = 160 + (message.createdAt?.utf8.count ?? 0)
    for byte in message.content.utf8 {
      bytes += byte < 0x20 ? 6 : byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") ? 2 : 1
    }
    return bytes
  }
}

/// The `200` answer to `POST /v2/messages/batch`: one result per message, in the order given.
public struct MessageBatchAnswer: Sendable, Hashable, Codable {
  /// The results, in the body's order.
  public var results: [MessageBatchResult]

  /// An answer.
  public init(results: [MessageBatchResult]) { self.results = results }
}

/// One message's result in a batch: the message (as `POST /v2/messages` answers it), or
/// the error its own `POST` would have had.
///
/// `{"fromMessageRequestId": 7, "message": {…}, "replayed": false}` or
/// `{"fromMessageRequestId": 9, "error": {"code": "not_found", "message": "toUserId 99 does not exist"}}`
public struct MessageBatchResult: Sendable, Hashable, Codable {
  /// The message's `requestId`.
  public var fromMessageRequestId: Int64
  /// The stored message; nil when refused.
  public var message: RelayMessage?
  /// Whether the relay had it already (a retry), as `Idempotent-Replayed` says for one.
  public var replayed: Bool?
  /// Why this message was refused; nil when stored.
  public var error: ErrorBody.Detail?

  /// A result.
  public init(fromMessageRequestId: Int64, message: RelayMessage?, replayed: Bool?, error: ErrorBody.Detail?) {
    self.fromMessageRequestId = fromMessageRequestId
    self.message = message
    self.replayed = replayed
    self.error = error
  }
}

/// One page of `GET /v2/messages`: messages to the caller, and updates of its sent ones.
public struct MessagesPage: Sendable, Hashable, Codable {
  /// The messages after the cursor, in id order.
  public var messages: [RelayMessage]
  /// Whether more messages follow.
  public var hasMore: Bool
  /// The status updates after the update cursor, in sequence order (a client reads a
  /// missing list as empty).
  public var statusUpdates: [StatusUpdate]?
  /// Where the caller's log stands after this page: the `lastSyncedMessage` to ask with
  /// next. The last message's id while `hasMore`; at the end, the newest id of the
  /// caller's log (which may be above the last message given, when older ones left with
  /// the retention window). Nil from a version-1 relay.
  public var cursor: Int64?

  /// A page.
  public init(messages: [RelayMessage], hasMore: Bool, statusUpdates: [StatusUpdate]?, cursor: Int64? = nil) {
    self.messages = messages
    self.hasMore = hasMore
    self.statusUpdates = statusUpdates
    self.cursor = cursor
  }
}

/// `GET /v2/users?ids=…`: the profiles the caller may see.
public struct UserList: Sendable, Hashable, Codable {
  /// The visible ones of the ids asked for.
  public var users: [RelayUser]

  /// A list.
  public init(users: [RelayUser]) { self.users = users }
}

/// `GET /v2/me`: whose token this is: the user and which of their devices.
///
/// `{"user": {"id": 1, "name": "Ada", …}, "device": {"id": 3, "name": "laptop"}}`
public struct TokenOwner: Sendable, Hashable, Codable {
  /// The token's user.
  public var user: RelayUser
  /// The token's device; nil from a relay older than devices (it sends no `device`).
  public var device: DeviceInfo?

  /// The answer for `user` and `device`.
  public init(user: RelayUser, device: DeviceInfo? = nil) {
    self.user = user
    self.device = device
  }
}

/// One device of a user, as `GET /v2/me` names the caller's: `{"id": 3, "name": "laptop"}`.
///
/// A token belongs to one device; each device of a user has its own token, its own
/// `requestId`s and its own idempotency records on the relay.
public struct DeviceInfo: Sendable, Hashable, Codable {
  /// The device's id, given by the relay (`chat-relay device add` prints it).
  public var id: Int64
  /// The name it was added with.
  public var name: String

  /// A device.
  public init(id: Int64, name: String) {
    self.id = id
    self.name = name
  }
}

/// `GET /v2/health`: `{"ok": true, "version": 2}`.
public struct Health: Sendable, Hashable, Codable {
  /// Always true: the relay answers.
  public var ok: Bool
  /// The protocol's version.
  public var version: Int

  /// The relay's answer.
  public init(ok: Bool = true, version: Int = 2) {
    self.ok = ok
    self.version = version
  }
}

/// The body of every 4xx and 5xx answer.
///
/// `{"error": {"code": "bad_request", "message": "field 'toUserId': expected a positive integer", "field": "toUserId"}}`
public struct ErrorBody: Sendable, Hashable, Codable {
  /// What went wrong.
  public struct Detail: Sendable, Hashable, Codable {
    /// `bad_request`, `unauthorized`, … (the table of `docs/protocol.md`).
    public var code: String
    /// For a person: what was wrong, naming the field.
    public var message: String
    /// The field or query parameter at fault, when there is one (left out otherwise).
    public var field: String?

    /// A detail.
    public init(code: String, message: String, field: String? = nil) {
      self.code = code
      self.message = message
      self.field = field
    }
  }

  /// The error.
  public var error: Detail

  /// A body for `error`.
  public init(error: Detail) { self.error = error }
}

/// What the relay POSTs to `--push-webhook` for a recipient without an open socket: ids
/// and the badge count, never the content.
///
/// `{"toUserId": 2, "messageId": 10916218899464192, "fromUserId": 1, "unread": 3}`
public struct PushNotice: Sendable, Hashable, Codable {
  /// Who the push is for.
  public var toUserId: Int64
  /// The message it announces.
  public var messageId: Int64
  /// Its sender.
  public var fromUserId: Int64
  /// Messages waiting for the recipient (the badge count).
  public var unread: Int64

  /// A notice.
  public init(toUserId: Int64, messageId: Int64, fromUserId: Int64, unread: Int64) {
    self.toUserId = toUserId
    self.messageId = messageId
    self.fromUserId = fromUserId
    self.unread = unread
  }
}

/// The body of `POST /v2/messages/{id}/edit`: the sender's new text for message `id`.
///
/// `{"requestId": 31, "content": "Hi, all"}`
public struct MessageEditPost: Sendable, Hashable, Codable {
  /// The sender's idempotency key (the same sequence as a new message's `requestId`).
  public var requestId: Int64
  /// The new text, 1 to 65,536 bytes of UTF-8.
  public var content: String

  /// An edit.
  public init(requestId: Int64, content: String) {
    self.requestId = requestId
    self.content = content
  }
}

/// The body of `POST /v2/messages/{id}/delete`: the sender deletes message `id` for everyone.
///
/// `{"requestId": 32}`
public struct MessageDeletePost: Sendable, Hashable, Codable {
  /// The sender's idempotency key.
  public var requestId: Int64

  /// A delete.
  public init(requestId: Int64) { self.requestId = requestId }
}

/// The `200` answer to an edit or a delete: the update every device of both parties gets
/// (`message_edited` or `message_deleted`, as the sender's side sees it), and whether this
/// answer replays an earlier one (`Idempotent-Replayed` says it too).
public struct MessageChangeAnswer: Sendable, Hashable, Codable {
  public var fromMessageRequestId: Int64
  public var update: StatusUpdate
  public var replayed: Bool?

  /// An answer.
  public init(fromMessageRequestId: Int64, update: StatusUpdate, replayed: Bool?) {
    self.fromMessageRequestId = fromMessageRequestId
    self.update = update
    self.replayed = replayed
  }
}
