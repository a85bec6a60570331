import ChatProtocol
import ChatStore
import Foundation

/// The relay's HTTP side (`docs/protocol.md`) over an `HTTPTransport`: JSON in, the
/// store's models out, every answer sorted into what the engine does next.
struct RelayAPI: Sendable {
  let http: HTTPTransport

  /// What a `POST /v2/messages` came to.
  enum PostOutcome: Equatable, Sendable {
    /// 201: the relay has it (`replayed`: it had it already, the first answer was lost).
    /// `previousId` is the message before it in the owner's log (nil on a replay).
    case accepted(Message, previousId: Int64?, replayed: Bool)
    /// No answer, a timeout, 5xx, or 429: try again later (`retryAfter` from the relay).
    case retryable(String, retryAfter: Double?)
    /// Another 4xx: this request can never succeed as it is.
    case rejected(String)
    /// 401: the token is refused; nothing can be sent until it is fixed.
    case unauthorized(String)
    /// No connection could be made: the request never left; try again later.
    case unreachable(String)
    /// A batch sent while the one before it was in flight, tried before it was stored
    /// (`409 out_of_order`): nothing of it was tried; it goes again after that one.
    case outOfOrder(String)
  }

  func post(_ request: MessageRequest, attachments: [AttachmentPost]? = nil, timeout: Double) async -> PostOutcome {
    var body = Self.post(request)
    body.attachments = attachments
    let reply: HTTPReply
    do {
      reply = try await http.send(
        HTTPCall(method: "POST", path: "/v2/messages", body: WireJSON.encode(body), timeout: timeout))
    } catch let error as TransportError where error.neverConnected {
      return .unreachable("\(error)")
    } catch {
      return .retryable("\(error)", retryAfter: nil)
    }
    return Self.outcome(of: reply)
  }

  /// Sends several messages of one conversation in one `POST /v2/messages/batch`, in
  /// order; one outcome per request, in the same order (the whole batch's when it failed
  /// as a whole).
  func post(batch requests: [MessageRequest], after: Int64? = nil, timeout: Double) async -> [PostOutcome] {
    let body = MessageBatchPost(messages: requests.map(Self.post), after: after)
    let reply: HTTPReply
    do {
      reply = try await http.send(
        HTTPCall(method: "POST", path: "/v2/messages/batch", body: body.json, timeout: timeout))
    } catch let error as TransportError where error.neverConnected {
      return Array(repeating: .unreachable("\(error)"), count: requests.count)
    } catch {
      return Array(repeating: .retryable("\(error)", retryAfter: nil), count: requests.count)
    }
    return Self.outcomes(of: reply, for: requests.map(\.requestID))
  }

  /// What an edit or a delete for everyone came to: the update the relay made (`200`), or
  /// what a failed post would be (retryable, refused for good, unauthorized, unreachable).
  enum ChangeOutcome: Sendable {
    case applied(StatusUpdate)
    case failed(PostOutcome)
  }

  /// `POST /v2/messages/{id}/edit` or `/delete`.
  func change(_ change: MessageChange, timeout: Double) async -> ChangeOutcome {
    let body: [UInt8] =
      switch change.kind {
      case .edit: WireJSON.encode(MessageEditPost(requestId: change.requestID, content: change.content ?? ""))
      case .delete: WireJSON.encode(MessageDeletePost(requestId: change.requestID))
      }
    let reply: HTTPReply
    do {
      reply = try await http.send(
        HTTPCall(
          method: "POST", path: "/v2/messages/\(change.messageID)/\(change.kind.rawValue)", body: body,
          timeout: timeout))
    } catch let error as TransportError where error.neverConnected {
      return .failed(.unreachable("\(error)"))
    } catch {
      return .failed(.retryable("\(error)", retryAfter: nil))
    }
    guard reply.status == 200 else {
      return .failed(
        reply.status == 201 ? .retryable("HTTP 201 to a change", retryAfter: nil) : Self.outcome(of: reply))
    }
    guard let answer = try? WireJSON.decode(MessageChangeAnswer.self, from: reply.body),
      answer.fromMessageRequestId == change.requestID
    else {
      return .failed(.retryable("HTTP 200 with a body that is not this change's answer", retryAfter: nil))
    }
    var update = answer.update
    update.type = change.kind == .edit ? .messageEdited : .messageDeleted
    if change.kind == .edit { update.content = update.content ?? change.content }
    return .applied(update)
  }

  /// A request as the relay takes it.
  static func post(_ request: MessageRequest) -> MessagePost {
    MessagePost(
      requestId: request.requestID, toUserId: request.toUserID, content: request.content, createdAt: request.createdAt)
  }

  /// How many of `requests`, from the first, one batch takes: at most
  /// ``MessageBatchPost/maximumMessages``, in a body under
  /// ``MessageBatchPost/maximumBodyBytes`` (a larger one gets `413`, which would fail
  /// every message of it); always at least one, as one message always fits.
  static func batchPrefix(_ requests: some Collection<MessageRequest>) -> Int {
    var count = 0
    var bytes = 64
    for request in requests.prefix(MessageBatchPost.maximumMessages) {
      bytes += MessageBatchPost.bytesBound(of: post(request))
      if count > 0 && bytes > MessageBatchPost.maximumBodyBytes { break }
      count += 1
    }
    return count
  }

  /// Sorts an answer to a batch (separate so the unit tests can feed it every case).
  static func outcomes(of reply: HTTPReply, for requestIDs: [Int64]) -> [PostOutcome] {
    guard reply.status == 200 else {
      if reply.status == 409, let body = try? WireJSON.decode(ErrorBody.self, from: reply.body),
        body.error.code == "out_of_order"
      {
        return Array(repeating: .outOfOrder(body.error.message), count: requestIDs.count)
      }
      let whole = reply.status == 201 ? .retryable("HTTP 201 to a batch", retryAfter: nil) : outcome(of: reply)
      return Array(repeating: whole, count: requestIDs.count)
    }
    guard
      let answer = MessageBatchAnswer.parsePlain(reply.body)
        ?? (try? WireJSON.decode(MessageBatchAnswer.self, from: reply.body)),
      answer.results.map(\.fromMessageRequestId) == requestIDs
    else {
      return Array(
        repeating: .retryable("HTTP 200 with a body that is not this batch's results", retryAfter: nil),
        count: requestIDs.count)
    }
    return answer.results.map { result in
      if let message = result.message {
        return .accepted(message.model, previousId: message.previousId, replayed: result.replayed == true)
      }
      let error = result.error ?? ErrorBody.Detail(code: "internal", message: "neither a message nor an error")
      let reason = "\(error.code): \(error.message)"
      switch error.code {
      case "unavailable", "internal", "throttled": return .retryable(reason, retryAfter: nil)
      case "unauthorized": return .unauthorized(reason)
      default: return .rejected(reason)
      }
    }
  }

  /// Sorts an answer to a POST (separate so the unit tests can feed it every status).
  static func outcome(of reply: HTTPReply) -> PostOutcome {
    switch reply.status {
    case 200, 201:
      guard let answer = try? WireJSON.decode(MessagePostAnswer.self, from: reply.body) else {
        return .retryable("HTTP \(reply.status) with a body that is not a message", retryAfter: nil)
      }
      return .accepted(
        answer.message.model, previousId: answer.message.previousId,
        replayed: reply.headers["idempotent-replayed"] == "true")
    case 401:
      return .unauthorized(Self.reason(reply))
    case 429:
      let after = reply.headers["retry-after"].flatMap(Double.init).map { min(max($0, 0), 3_600) }
      return .retryable(Self.reason(reply), retryAfter: after)
    case 408, 500...599:
      return .retryable(Self.reason(reply), retryAfter: nil)
    default:
      return .rejected(Self.reason(reply))
    }
  }

  /// `HTTP 409 conflict: requestId 7 was used…` from the relay's error body.
  static func reason(_ reply: HTTPReply) -> String {
    if let body = try? WireJSON.decode(ErrorBody.self, from: reply.body) {
      return "HTTP \(reply.status) \(body.error.code): \(body.error.message)"
    }
    return "HTTP \(reply.status)"
  }

  /// One page of `GET /v2/messages`.
  struct SyncPage: Sendable {
    var messages: [RelayMessage]
    var hasMore: Bool
    var updates: [StatusUpdate]
    /// Where the owner's log stands after the page.
    var cursor: Int64
  }

  ///
  /// `from`: a page further on than `cursor` (the stored place, which the relay takes
  /// as acknowledged): the next page, fetched while the last is being stored.
  func sync(after cursor: ChatRepository.SyncCursor, from: Int64? = nil, limit: Int) async throws -> SyncPage {
    var path = "/v2/messages?lastSyncedMessage=\(cursor.messages)&limit=\(limit)&lastSyncedUpdate=\(cursor.updates)"
    if let from, from > cursor.messages { path += "&after=\(from)" }
    let reply = try await http.send(HTTPCall(method: "GET", path: path))
    let page: MessagesPage = try Self.decode(reply, "GET /v2/messages")
    return SyncPage(
      messages: page.messages, hasMore: page.hasMore, updates: page.statusUpdates ?? [],
      cursor: page.cursor ?? page.messages.last?.messageId ?? max(cursor.messages, from ?? 0))
  }

  /// Whose token this is (`GET /v2/me`): `owner`'s profile, or `WrongUserToken` when the
  /// token is another user's.
  func me(requiring owner: Int64, timeout: Double = 10) async throws -> (user: User, device: Int64?) {
    let reply = try await http.send(HTTPCall(method: "GET", path: "/v2/me", timeout: timeout))
    let answer: TokenOwner = try Self.decode(reply, "GET /v2/me")
    guard answer.user.id == owner else { throw WrongUserToken(tokenUser: answer.user.id, fileOwner: owner) }
    return (answer.user.model, answer.device?.id)
  }

  /// One profile, nil when the relay does not show it (unknown, or no conversation yet).
  func profile(_ id: Int64, timeout: Double) async throws -> User? {
    let reply = try await http.send(HTTPCall(method: "GET", path: "/v2/users/\(id)", timeout: timeout))
    guard reply.status != 403, reply.status != 404 else { return nil }
    let user: RelayUser = try Self.decode(reply, "GET /v2/users/\(id)")
    return user.model
  }

  /// Profiles of `ids` the caller may see (others are left out).
  func profiles(_ ids: [Int64]) async throws -> [User] {
    guard !ids.isEmpty else { return [] }
    var users: [User] = []
    for chunk in stride(from: 0, to: ids.count, by: 100).map({ Array(ids[$0..<min($0 + 100, ids.count)]) }) {
      let reply = try await http.send(
        HTTPCall(method: "GET", path: "/v2/users?ids=" + chunk.map(String.init).joined(separator: ",")))
      let list: UserList = try Self.decode(reply, "GET /v2/users")
      users += list.users.map(\.model)
    }
    return users
  }

  static func decode<T: Decodable>(_ reply: HTTPReply, _ what: String) throws -> T {
    guard reply.status == 200 else {
      if reply.status == 401 { throw SyncFailure.unauthorized(reason(reply)) }
      throw SyncFailure.relay("\(what): \(reason(reply))")
    }
    do {
      return try WireJSON.decode(T.self, from: reply.body)
    } catch {
      throw SyncFailure.relay("\(what): the answer is not what docs/protocol.md says (\(error))")
    }
  }
}

/// The token is another user's: the client refuses to send this file's outbox with it.
public struct WrongUserToken: Error, Sendable, CustomStringConvertible {
  public var tokenUser: Int64
  public var fileOwner: Int64
  public var description: String {
    "The token is user \(tokenUser)'s, not user \(fileOwner)'s (the file's owner); nothing was sent"
  }
}

/// One-off requests for the commands that do not run a `SyncEngine`.
public struct RelayRequests: Sendable {
  let api: RelayAPI
  public init(http: HTTPTransport) { api = RelayAPI(http: http) }

  /// Checks that the token is `owner`'s (`GET /v2/me`): throws `WrongUserToken` when it is
  /// another user's, `SyncFailure.unauthorized` when refused, and the transport's error
  /// when the relay cannot be reached.
  public func requireIdentity(_ owner: Int64, timeout: Double = 10) async throws {
    _ = try await api.me(requiring: owner, timeout: timeout)
  }

  /// A contact's profile, nil when the relay does not show it.
  public func profile(_ id: Int64, timeout: Double = 3) async throws -> User? {
    try await api.profile(id, timeout: timeout)
  }
}

/// Why a sync could not finish.
public enum SyncFailure: Error, Sendable, CustomStringConvertible {
  /// The token was refused (HTTP 401).
  case unauthorized(String)
  /// The relay answered something unusable.
  case relay(String)

  public var description: String {
    switch self {
    case .unauthorized(let reason): "the relay refused the token (\(reason))"
    case .relay(let reason): reason
    }
  }
}

// MARK: - The batch body without JSONEncoder

extension MessageBatchPost {
  /// The bytes `WireJSON.encode` writes (keys sorted, `createdAt` only when set), written
  /// member by member: `JSONEncoder` was 4% of a sender's CPU under a backlog.
  /// `PlainDecodingTests` checks both agree.
  var json: [UInt8] {
    var body = JSONObjectWriter()
    if let after { body.int("after", after) }
    var list: [UInt8] = [UInt8(ascii: "[")]
    for (index, message) in messages.enumerated() {
      if index > 0 { list.append(UInt8(ascii: ",")) }
      var object = JSONObjectWriter()
      object.string("content", message.content)
      if let createdAt = message.createdAt { object.string("createdAt", createdAt) }
      object.int("requestId", message.requestId)
      object.int("toUserId", message.toUserId)
      list += object.closed
    }
    list.append(UInt8(ascii: "]"))
    body.raw("messages", list)
    return body.closed
  }
}

// MARK: - From the wire's types to the file's

extension RelayMessage {
  /// The message as `ChatRepository` stores it; a status it does not know is `SYNCED`.
  /// Its `requestId` is kept (a message of this device is matched to its outbox by it).
  var model: Message {
    Message(
      id: messageId, fromUserID: fromUserId, toUserID: toUserId, content: content,
      status: MessageStatus(rawValue: status) ?? .synced, createdAt: createdAt, requestID: requestId,
      version: version ?? 0, editedAt: editedAt, deletedAt: deletedAt,
      history: (edits ?? []).map { MessageVersion(version: $0.version, content: $0.content, editedAt: $0.editedAt) },
      attachments: (attachments ?? []).compactMap(\.model))
  }

  /// The message as `device`'s file stores it: the request id only if that device sent it
  /// (another device's request ids mean nothing in this file).
  func model(onDevice device: Int64?) -> Message {
    var message = model
    if device == nil || fromDeviceId != device { message.requestID = nil }
    return message
  }
}

extension RelayAttachment {
  /// The attachment as `ChatRepository` stores it (a thumbnail that is not base64 is
  /// left out); nil when it cannot be stored (a SHA-256 that is not 64 lowercase hex
  /// digits, a negative size): the message is kept without it.
  var model: Attachment? {
    guard MediaFolder.isMediaName(sha256), size >= 0 else { return nil }
    return Attachment(
      sha256: sha256, mime: mime, size: size, relayID: mediaId, width: width, height: height, durationMs: durationMs,
      thumbnail: thumbnail.flatMap { Data(base64Encoded: $0) }.map { Array($0) })
  }
}

extension RelayUser {
  /// The profile as `ChatRepository` stores it.
  var model: User { User(id: id, name: name, avatarURL: avatarURL, lastConnectedAt: lastConnectedAt) }
}
