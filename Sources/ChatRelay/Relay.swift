import ChatProtocol
import ChatStore
import Foundation

/// The relay of `docs/protocol.md`: HTTP requests and socket events turned into
/// `RelayStore` calls, and the events they cause sent to the sockets concerned.
///
/// ```swift
/// let relay = try Relay(databasePath: "relay.db")
/// let server = try RelayServer(port: 8080, handlers: relay.handlers)
/// relay.attach(server)
/// server.run()
/// ```
/// `@unchecked Sendable`: the server calls every handler on its one service thread, and
/// all mutable state here (`store`, `sockets`) is only touched from those handlers.
public final class Relay: @unchecked Sendable {
  /// The relay's state.
  let store: RelayStore
  /// Injected faults (off unless `--faults`).
  let faults: Faults
  /// Where push notifications are also POSTed, if anywhere.
  let pushWebhook: PushWebhook?
  /// The clock, in milliseconds since 1970 (tests move it).
  let now: @Sendable () -> Int64
  /// How long idempotency records outlive their messages, in milliseconds.
  let idempotencyWindow: Int64
  /// How long messages stay in their parties' logs.
  let retention: Retention
  /// How long after it was sent a message can be edited or deleted for everyone, in milliseconds.
  let editWindow: Int64
  /// The media folder beside the database (uploads and blobs).
  let media: MediaFolder
  /// Media sizes and upload lifetimes.
  let limits: MediaLimits
  /// Uploads with a PATCH in progress: one at a time each.
  var activeUploads: Set<String> = []
  /// The PATCHes whose bodies are streaming, by request.
  var uploadStreams: [HTTPExchangeID: UploadStream] = [:]
  /// Uploads' hashes so far, by upload (lost with the process: the last PATCH then
  /// reads the file).
  var runningHashes: [String: RunningHash] = [:]
  /// When the retention window was last swept (see ``sweepIfDue(now:)``).
  private var lastSweep: Int64 = .min
  private weak var server: RelayServer?
  /// Open sockets and their users' devices.
  private var sockets: [SocketID: RelayCredential] = [:]
  private var socketsOfUser: [Int64: Set<SocketID>] = [:]
  /// What this turn's handlers said, held until the turn's commit (group commit).
  private var effects: [HeldEffect] = []
  /// This turn's log lines, written together at its end.
  private var logLines: [String] = []
  /// A delete for everyone was written this turn: once committed, the WAL (whose older
  /// frames still hold the text) is checkpointed and truncated.
  private var eraseAfterCommit = false

  /// An answer, event or webhook call that reports a change: it leaves only once the
  /// transaction (`group`) holding the change is committed, and never if it fails.
  private struct HeldEffect {
    enum Kind {
      case answer(HTTPExchangeID, HTTPResponse)
      case event(String, SocketID)
      case webhook(RelayMessage, unread: Int64)
    }
    var kind: Kind
    /// The store's group open when it was said; nil when it reports no write.
    var group: Int?
  }

  /// Opens (or creates) the relay's database. A `pushWebhook` that is not an `http://` or
  /// `https://` URL is refused; an `https://` one is checked against the system's CAs, or
  /// only `pushWebhookCAFile`'s.
  public init(
    databasePath: String, faults: Faults = Faults(), pushWebhook: URL? = nil, pushWebhookCAFile: String? = nil,
    idempotencyDays: Int = 7,
    retention: Retention = .days(30), editWindowHours: Int = 48, media limits: MediaLimits = MediaLimits(),
    now: @escaping @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
  ) throws {
    store = try RelayStore(path: databasePath)
    media = MediaFolder(databasePath: databasePath)
    self.limits = limits
    self.faults = faults
    self.idempotencyWindow = Int64(idempotencyDays) * 86_400_000
    self.retention = retention
    self.editWindow = Int64(editWindowHours) * 3_600_000
    self.pushWebhook = try pushWebhook.map { try PushWebhook(url: $0, caFile: pushWebhookCAFile) }
    self.now = now
  }

  /// The server this relay sends its events through.
  public func attach(_ server: RelayServer) { self.server = server }

  /// The handlers to create the `RelayServer` with.
  ///
  /// Group commit: everything the handlers of one service turn do is one transaction,
  /// committed when the turn ends (``endTurn(log:)``); only then do the turn's answers
  /// and events leave, so a `201` still means committed, and a message is never announced
  /// before it is. `log` gets the turn's lines together, one call per turn.
  public func handlers(log: @escaping @Sendable (String) -> Void = { _ in }) -> RelayServer.Handlers {
    store.groupsCalls = true
    // Serving: checkpoints leave the service thread (SQLite's own stay if that fails).
    try? store.checkpointInBackground()
    return RelayServer.Handlers(
      http: { [self] in answer($0) },
      authorizeSocket: { [self] in try authenticate($0) },
      socketOpened: { [self] in opened($0, by: $1) },
      socketText: { [self] in received($2, on: $0, from: $1) },
      socketClosed: { [self] in closed($0, by: $1) },
      log: { [self] in logLines.append($0) },
      turnEnded: { [self] in endTurn(log: log) },
      bodyRoute: { [self] request in
        request.method == "PATCH" && request.path.hasPrefix("/v2/uploads/") ? uploadPatchRoute(request) : .gather
      })
  }

  /// The handler's answer: given at once when it reports no write, else held until the
  /// turn's commit.
  func answer(_ request: HTTPRequest) -> HTTPResponse? {
    sweepIfDue(now: now())
    let response = respond(to: request)
    guard let group = store.openGroup else { return response }
    effects.append(HeldEffect(kind: .answer(request.exchange, response), group: group))
    return nil
  }

  /// Commits the turn's writes, then lets out what reported them; when the commit fails
  /// their answers become `503 unavailable` and their events are dropped (the client
  /// retries; the same `requestId` is then a new message, as none was stored).
  func endTurn(log: (String) -> Void) {
    var committed: Int?
    var failure: String?
    do {
      committed = try store.commitGroup()
    } catch {
      failure = "\(error)"
      logLines.append("commit failed, answering 503: \(error)")
    }
    let held = effects
    effects = []
    for effect in held {
      let holds = effect.group == nil || effect.group == committed
      switch effect.kind {
      case .answer(let exchange, let response):
        server?.answer(
          exchange,
          with: holds
            ? response
            : APIError.unavailable("the relay could not commit: \(failure ?? "the transaction was rolled back")")
              .response)
      case .event(let text, let socket):
        if holds { transmit(text, to: socket) }
      case .webhook(let message, let unread):
        if holds { notifyWebhook(message, unread: unread) }
      }
    }
    if eraseAfterCommit {
      eraseAfterCommit = false
      if let error = store.truncateLog() { logLines.append("erase: \(error)") }
    }
    closeSocketsOfRemovedDevices()
    if !logLines.isEmpty {
      log(logLines.joined(separator: "\n"))
      logLines.removeAll(keepingCapacity: true)
    }
  }

  /// A line for the turn's log.
  func log(_ line: String) { logLines.append(line) }

  /// Closes (1008) the sockets of devices removed by another process (`chat-relay device
  /// remove` or `user remove` while the relay runs), so a removed device is not left
  /// receiving events until it reconnects: its reconnection is then refused (401). Looked
  /// at only when `PRAGMA data_version` says another connection committed, which the
  /// relay's own commits never do, so a turn costs one pragma.
  private func closeSocketsOfRemovedDevices() {
    guard !sockets.isEmpty, store.othersCommitted() else { return }
    guard let removed = try? store.missingDevices(among: Set(sockets.values.map(\.device))), !removed.isEmpty
    else { return }
    for (socket, owner) in sockets where removed.contains(owner.device) {
      logLines.append("socket \(socket.raw) closed: device \(owner.device) of user \(owner.user) was removed")
      server?.close(socket, code: 1008)
    }
  }

  // MARK: - HTTP

  func respond(to request: HTTPRequest) -> HTTPResponse {
    // A streamed body the answer did not take (its token refused meanwhile, a fault):
    // closed, its upload free for the next PATCH.
    defer { uploadStreams[request.exchange]?.abandon() }
    do {
      if request.path == "/v2/health" {
        return try only("GET", request) { .wire(200, Health()) }
      }
      if request.path.hasPrefix("/v1/") { throw APIError.versionGone }
      if request.path == "/v2/uploads" && request.method == "OPTIONS" { return uploadOptions() }
      let owner = try authenticate(request) ?? { throw APIError.unauthorized }()
      if request.path == "/v2/uploads" || request.path.hasPrefix("/v2/uploads/") {
        do { return try respondUploads(request, owner: owner) } catch { return Self.tusError(error) }
      }
      if request.path.hasPrefix("/v2/media/") { return try respondMedia(request, owner: owner) }
      let user = owner.user
      switch request.path {
      case "/v2/messages":
        if request.method == "POST" { return try postMessage(request, from: owner) }
        return try only("GET", request, allow: "GET, POST") { try sync(request, for: owner) }
      case "/v2/messages/batch":
        return try only("POST", request) { try postBatch(request, from: owner) }
      case "/v2/me":
        // Whose token this is: a client checks it before it sends anything as that user.
        return try only("GET", request) {
          guard let me = try store.user(id: user), let device = try store.device(id: owner.device) else {
            throw APIError.unauthorized
          }
          return .wire(200, TokenOwner(user: me, device: device.info))
        }
      case "/v2/users":
        return try only("GET", request) { try profiles(request.query["ids"], for: user) }
      case let path where path.hasPrefix("/v2/messages/") && (path.hasSuffix("/edit") || path.hasSuffix("/delete")):
        return try only("POST", request) { try changeMessage(request, path: path, from: owner) }
      case let path where path.hasPrefix("/v2/users/"):
        return try only("GET", request) { try profile(String(path.dropFirst("/v2/users/".count)), for: user) }
      default:
        throw APIError.notFound("no such path: \(request.path)")
      }
    } catch {
      return Self.apiError(error).response
    }
  }

  /// The protocol's error for what a handler threw.
  static func apiError(_ error: any Error) -> APIError {
    switch error {
    case let error as APIError: error
    case let error as RequestIDConflict: .conflict(error.description)
    case let error as ChangeRefused:
      error.reason == .deleted ? .conflict(error.description) : .forbidden(error.description)
    case let error as StoreError: APIError(error)
    default: .internal("\(error)")
    }
  }

  /// Runs `body` for `method` only; any other is 405 with `Allow: allow` (the path's
  /// methods, when the caller handled another one before).
  private func only(_ method: String, _ request: HTTPRequest, allow: String? = nil, _ body: () throws -> HTTPResponse)
    throws -> HTTPResponse
  {
    guard request.method == method else { throw APIError.methodNotAllowed(allow ?? method) }
    return try body()
  }

  /// The user and device of the request's bearer token, or nil.
  func authenticate(_ request: HTTPRequest) throws -> RelayCredential? {
    guard let header = request.headers["authorization"], header.hasPrefix("Bearer ") else { return nil }
    // Spaces around the token are dropped by hand: Foundation's trimmingCharacters(in:)
    // was 9% of the relay's CPU per message in the bench's perf profile.
    let token = header.utf8.dropFirst("Bearer ".count).drop { $0 == UInt8(ascii: " ") }
    let end = token.lastIndex { $0 != UInt8(ascii: " ") }.map { token.index(after: $0) } ?? token.startIndex
    return try store.authenticate(token: String(decoding: token[..<end], as: UTF8.self))
  }

  // MARK: POST /v2/messages

  func postMessage(_ request: HTTPRequest, from owner: RelayCredential) throws -> HTTPResponse {
    if faults.fire(.error503) { throw APIError.unavailable("fault injected: error-503") }
    if faults.fire(.throttle429) { throw APIError.throttled(retryAfter: 1) }
    let body: MessagePost = try MessagePost.parsePlain(request.body) ?? decode(request.body)
    let posted = try accept(body, from: owner, now: now())
    // The answer and the events are the bytes of `WireJSON.encode` of `MessagePostAnswer`
    // and `ServerEvent.newMessage` (keys sorted, no spaces; RelayWireTests checks it).
    var answer = JSONObjectWriter()
    answer.int("fromMessageRequestId", body.requestId)
    answer.raw("message", posted.message.json)
    var response = HTTPResponse.json(201, answer.closed)
    if !posted.isNew { response.headers.append(("Idempotent-Replayed", "true")) }
    if faults.fire(.dropResponse) { response.dropConnection = true }
    return response
  }

  /// The most messages `POST /v2/messages/batch` takes.
  static let maximumBatch = MessageBatchPost.maximumMessages

  /// `POST /v2/messages/batch`: each message as its own `POST /v2/messages` would be, in
  /// order, each answered in `results` (a refused one with its error, the others stored).
  /// A failure of the whole (a fault, a failed commit) answers for every message.
  func postBatch(_ request: HTTPRequest, from owner: RelayCredential) throws -> HTTPResponse {
    if faults.fire(.error503) { throw APIError.unavailable("fault injected: error-503") }
    if faults.fire(.throttle429) { throw APIError.throttled(retryAfter: 1) }
    let body: MessageBatchPost = try MessageBatchPost.parsePlain(request.body) ?? decode(request.body)
    guard (1...Self.maximumBatch).contains(body.messages.count) else {
      throw APIError.badRequest(
        "field 'messages': expected 1 to \(Self.maximumBatch) messages, got \(body.messages.count)", field: "messages")
    }
    if let after = body.after {
      guard after > 0 else { throw APIError.badRequest("field 'after': expected a positive integer", field: "after") }
      guard try store.hasRequest(from: owner.user, device: owner.device, requestID: after) else {
        throw APIError.outOfOrder(
          "field 'after': request \(after) of this device is not on the relay yet; none of the batch was tried")
      }
    }
    let now = self.now()
    var results: [[UInt8]] = []
    results.reserveCapacity(body.messages.count)
    // A message refused for good (4xx) leaves the others to go on, as one refused POST
    // would; after one that could not be stored now (5xx) none is tried, so none is
    // stored ahead of it: the client sends them again in order.
    var stoppedBy: Int?
    for (index, message) in body.messages.enumerated() {
      // `{error?, fromMessageRequestId, message?, replayed?}`, keys in order.
      var result = JSONObjectWriter()
      do {
        if let stoppedBy {
          throw APIError.unavailable("not tried: message \(stoppedBy) of the batch could not be stored now")
        }
        let posted = try accept(message, from: owner, now: now)
        result.int("fromMessageRequestId", message.requestId)
        result.raw("message", posted.message.json)
        result.bool("replayed", !posted.isNew)
      } catch {
        var refused = Self.apiError(error)
        if refused.status >= 500 && stoppedBy == nil { stoppedBy = index }
        if let field = refused.field { refused.field = "messages[\(index)].\(field)" }
        var detail = JSONObjectWriter()
        detail.string("code", refused.code)
        if let field = refused.field { detail.string("field", field) }
        detail.string("message", refused.message)
        result.raw("error", detail.closed)
        result.int("fromMessageRequestId", message.requestId)
      }
      results.append(result.closed)
    }
    var answer = JSONObjectWriter()
    answer.raw("results", MessagesPage.array(results))
    var response = HTTPResponse.json(200, answer.closed)
    if faults.fire(.dropResponse) { response.dropConnection = true }
    return response
  }

  // MARK: POST /v2/messages/{id}/edit and /delete

  /// An edit or a delete for everyone by the message's sender: `200` with the update both
  /// parties get, and `message_edited` or `message_deleted` to every device of both but
  /// the one that asked (its answer is the update).
  func changeMessage(_ request: HTTPRequest, path: String, from owner: RelayCredential) throws -> HTTPResponse {
    if faults.fire(.error503) { throw APIError.unavailable("fault injected: error-503") }
    let parts = path.split(separator: "/")
    guard parts.count == 4, let messageID = Int64(parts[2]), messageID > 0 else {
      throw APIError.notFound("no such path: \(path)")
    }
    let kind: RelayStore.ChangeKind = parts[3] == "edit" ? .edit : .delete
    let requestID: Int64
    var content: String?
    if kind == .edit {
      let body: MessageEditPost = try decode(request.body)
      requestID = body.requestId
      let bytes = body.content.utf8.count
      guard bytes >= 1 else { throw APIError.badRequest("field 'content': an edit needs some text", field: "content") }
      guard bytes <= RelayStore.maximumContentBytes else {
        throw APIError.tooLarge(
          "field 'content': at most \(RelayStore.maximumContentBytes) bytes, got \(bytes)", field: "content")
      }
      content = body.content
    } else {
      let body: MessageDeletePost = try decode(request.body)
      requestID = body.requestId
    }
    guard requestID > 0 else {
      throw APIError.badRequest("field 'requestId': expected a positive integer", field: "requestId")
    }
    let changed = try store.change(
      kind, of: messageID, by: owner.user, device: owner.device, requestID: requestID, content: content, now: now(),
      editWindow: editWindow)
    for update in changed.pushed {
      let event = Self.event(update.kind.rawValue, update.json)
      for socket in socketsOfUser[update.userId] ?? [] where sockets[socket]?.device != owner.device {
        send(event, to: socket)
      }
    }
    if kind == .delete && changed.isNew { eraseAfterCommit = true }
    var response = HTTPResponse.wire(
      200, MessageChangeAnswer(fromMessageRequestId: requestID, update: changed.update, replayed: !changed.isNew))
    if !changed.isNew { response.headers.append(("Idempotent-Replayed", "true")) }
    if faults.fire(.dropResponse) { response.dropConnection = true }
    return response
  }

  /// Stores one message of `owner` (validated as `docs/protocol.md` says) and sends it to
  /// every device concerned; returns it as its sender's device is answered: with its
  /// place in the sender's log when new.
  private func accept(_ body: MessagePost, from owner: RelayCredential, now: Int64) throws -> Posted {
    guard body.requestId > 0 else {
      throw APIError.badRequest("field 'requestId': expected a positive integer", field: "requestId")
    }
    guard body.toUserId > 0 else {
      throw APIError.badRequest("field 'toUserId': expected a positive integer", field: "toUserId")
    }
    let bytes = body.content.utf8.count
    guard bytes >= 1 || !(body.attachments ?? []).isEmpty else {
      throw APIError.badRequest("field 'content': a message needs some text or an attachment", field: "content")
    }
    guard bytes <= RelayStore.maximumContentBytes else {
      throw APIError.tooLarge(
        "field 'content': at most \(RelayStore.maximumContentBytes) bytes, got \(bytes)", field: "content")
    }
    var createdAt = Timestamp.string(milliseconds: now)
    if let given = body.createdAt {
      guard let ms = Timestamp.milliseconds(from: given) else {
        throw APIError.badRequest(
          "field 'createdAt': expected an ISO 8601 time like 2026-01-31T12:00:00.000Z", field: "createdAt")
      }
      createdAt = Timestamp.string(milliseconds: ms)
    }
    var posted = try store.post(
      from: owner.user, device: owner.device, requestID: body.requestId, to: body.toUserId, content: body.content,
      createdAt: createdAt, attachments: body.attachments ?? [], now: now)
    if let place = posted.place {
      deliver(posted.message, place: place, from: owner.device)
      // The sender's answer carries its place in the sender's log, as its other devices' events do.
      posted.message.previousId = place.sender
    }
    return posted
  }

  /// Deletes what the retention window no longer keeps (``RelayStore/sweep``), a batch
  /// of at most 10,000 messages a turn: once a minute, or at the next message while the
  /// last batch was full.
  func sweepIfDue(now: Int64) {
    guard lastSweep == .min || now - lastSweep >= 60_000 else { return }
    let deleted = (try? store.sweep(now: now, retention: retention, idempotencyWindow: idempotencyWindow)) ?? 0
    sweepUploads(now: now)
    lastSweep = deleted >= 10_000 ? .min : now
  }

  /// Sends a new message to every device of both parties but the one that sent it (the
  /// `201` answers that one), each event with the message's place in that user's log; a
  /// recipient with no open socket gets a push record instead.
  private func deliver(_ message: RelayMessage, place: LogPlace, from device: Int64) {
    var own = message
    own.previousId = place.sender
    let ownEvent = Self.event("new_message", own.json)
    for socket in socketsOfUser[message.fromUserId] ?? [] where sockets[socket]?.device != device {
      send(ownEvent, to: socket)
    }
    var received = message
    received.fromDeviceId = nil
    received.requestId = nil
    received.previousId = place.recipient
    let event = Self.event("new_message", received.json)
    let targets = socketsOfUser[message.toUserId] ?? []
    if targets.isEmpty {
      let at = Timestamp.string(milliseconds: now())
      let push = try? store.recordPush(to: message.toUserId, messageId: message.messageId, at: at)
      if pushWebhook != nil {
        if let group = store.openGroup {
          effects.append(HeldEffect(kind: .webhook(message, unread: push?.unread ?? 0), group: group))
        } else {
          notifyWebhook(message, unread: push?.unread ?? 0)
        }
      }
      return
    }
    for socket in targets {
      send(event, to: socket)
      if faults.fire(.duplicateEvent) { send(event, to: socket) }
    }
  }

  private func notifyWebhook(_ message: RelayMessage, unread: Int64) {
    guard let pushWebhook else { return }
    pushWebhook.post(
      PushNotice(
        toUserId: message.toUserId, messageId: message.messageId, fromUserId: message.fromUserId, unread: unread))
  }

  // MARK: GET /v2/messages

  /// A page of the caller's log. The cursors it names are also the device's
  /// acknowledged place: it stored everything up to them. `after` (at or above
  /// `lastSyncedMessage`) starts the page further on: the next page, fetched while the
  /// last one is being stored, without saying it was.
  func sync(_ request: HTTPRequest, for owner: RelayCredential) throws -> HTTPResponse {
    let cursor = try request.int("lastSyncedMessage", default: 0, range: 0...Int64.max)
    let after = try request.int("after", default: cursor, range: cursor...Int64.max)
    let limit = try request.int("limit", default: 100, range: 1...Int64(RelayStore.maximumPageSize))
    let updateCursor = try request.int("lastSyncedUpdate", default: 0, range: 0...Int64.max)
    if cursor > 0 || updateCursor > 0 {
      try store.acknowledgeSync(
        user: owner.user, device: owner.device, messages: cursor, updates: updateCursor, retention: retention)
    }
    let page = try store.log(for: owner.user, after: after, limit: Int(limit))
    let updates = try store.statusUpdates(for: owner.user, after: updateCursor)
    return .json(
      200,
      MessagesPage(
        messages: page.messages, hasMore: page.hasMore, statusUpdates: updates.map(\.update), cursor: page.next
      ).json)
  }

  // MARK: GET /v2/users

  func profile(_ text: String, for viewer: Int64) throws -> HTTPResponse {
    guard let id = StoreLocation.parseUserID(text) else {
      throw APIError.badRequest("'\(text)' is not a user id", field: "id")
    }
    guard let user = try store.user(id: id) else { throw APIError.notFound("no user \(id)") }
    guard try store.canSee(viewer: viewer, user: id) else {
      throw APIError.forbidden("user \(id) is not someone you exchange messages with")
    }
    return .wire(200, user)
  }

  func profiles(_ list: String?, for viewer: Int64) throws -> HTTPResponse {
    guard let list, !list.isEmpty else {
      throw APIError.badRequest("query 'ids': expected a comma-separated list of user ids", field: "ids")
    }
    let parts = list.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    guard parts.count <= 100 else { throw APIError.badRequest("query 'ids': at most 100 ids", field: "ids") }
    var users: [RelayUser] = []
    for part in parts {
      guard let id = StoreLocation.parseUserID(part) else {
        throw APIError.badRequest("query 'ids': '\(part)' is not a user id", field: "ids")
      }
      if try store.canSee(viewer: viewer, user: id), let user = try store.user(id: id) { users.append(user) }
    }
    return .wire(200, UserList(users: users))
  }

  // MARK: - Sockets

  func opened(_ socket: SocketID, by owner: RelayCredential) {
    let user = owner.user
    let wasOnline = !(socketsOfUser[user]?.isEmpty ?? true)
    sockets[socket] = owner
    socketsOfUser[user, default: []].insert(socket)
    try? store.setLastConnected(id: user, device: owner.device, at: Timestamp.string(milliseconds: now()))
    if !wasOnline { announce(user, online: true) }
  }

  func closed(_ socket: SocketID, by owner: RelayCredential) {
    let user = owner.user
    sockets[socket] = nil
    socketsOfUser[user]?.remove(socket)
    let at = Timestamp.string(milliseconds: now())
    guard socketsOfUser[user]?.isEmpty ?? true else {
      // The user is still online on another socket: only this device was last seen now.
      try? store.setLastSeen(device: owner.device, at: at)
      return
    }
    socketsOfUser[user] = nil
    try? store.setLastConnected(id: user, device: owner.device, at: at)
    announce(user, online: false)
  }

  /// `contact_status_update` to every online contact of `user`.
  private func announce(_ user: Int64, online: Bool, typing: Bool = false, only target: Int64? = nil) {
    let lastSeen = (try? store.user(id: user))??.lastConnectedAt
    let event = WireJSON.string(
      ServerEvent.contactStatusUpdate(
        ContactStatus(
          userId: user, online: online || !(socketsOfUser[user]?.isEmpty ?? true), lastSeenAt: lastSeen,
          typing: typing, typingExpiresInMs: typing ? ContactStatus.typingWindowMilliseconds : 0)))
    let contacts = target.map { [$0] } ?? ((try? store.contacts(of: user)) ?? [])
    for contact in contacts {
      for socket in socketsOfUser[contact] ?? [] { send(event, to: socket) }
    }
  }

  func received(_ text: String, on socket: SocketID, from owner: RelayCredential) {
    let user = owner.user
    do {
      switch try decode(Array(text.utf8)) as ClientEvent {
      case .deliveryAck(let ack):
        guard ack.messageIds.count <= 500 else {
          throw APIError.badRequest(
            "field 'payload.messageIds': expected at most 500 ids, got \(ack.messageIds.count)",
            field: "payload.messageIds")
        }
        let updates = try store.acknowledgeDelivery(by: user, ids: ack.messageIds)
        for update in updates { push(update) }
        // Ids that delivered nothing now: already delivered, or no message to this user
        // on the relay (unknown, another user's, gone with the retention window).
        let delivered = Set(updates.map(\.update.messageId))
        let rest = Set(ack.messageIds).subtracting(delivered)
        let unknown = rest.isEmpty ? [] : try store.unheldMessages(to: user, among: rest)
        // The client keeps a message unconfirmed (and acknowledges it again after a
        // reconnect) until it sees it in one of these: an acknowledgement lost with its
        // socket is repeated.
        let acknowledged = ack.messageIds.filter { !unknown.contains($0) }
        if !acknowledged.isEmpty {
          send(WireJSON.string(ServerEvent.deliveryAcknowledged(MessageIDs(messageIds: acknowledged))), to: socket)
        }
        if !unknown.isEmpty {
          let ids = unknown.sorted()
          send(
            WireJSON.string(
              ServerEvent.error(
                EventError(
                  code: "not_found",
                  message:
                    "field 'payload.messageIds': no message to you with id \(ids.map(String.init).joined(separator: ", ")) on the relay",
                  messageIds: ids))), to: socket)
        }
      case .read(let receipt):
        try requireConversation(of: user, with: receipt.conversationId, "payload.conversationId")
        guard receipt.upTo > 0 else {
          throw APIError.badRequest(
            "field 'payload.upTo': expected a positive integer, got \(receipt.upTo)", field: "payload.upTo")
        }
        // A read receipt never stands in for delivery: the mark stops below any message
        // the reader has not acknowledged (RelayStore.markRead).
        for update in try store.markRead(by: user, conversation: receipt.conversationId, upTo: receipt.upTo) {
          push(update)
        }
        // The client keeps the receipt in its file (and sends it again) until this names a
        // mark at or above it; marks are forward only, so a repeat changes nothing.
        let mark = try store.readMark(by: user, conversation: receipt.conversationId)
        send(
          WireJSON.string(ServerEvent.readAcknowledged(ReadMark(conversationId: receipt.conversationId, upTo: mark))),
          to: socket)
      case .typing(let typing):
        try requireConversation(of: user, with: typing.toUserId, "payload.toUserId")
        announce(user, online: true, typing: typing.typing, only: typing.toUserId)
      case .updatesAck(let ack):
        try Self.requireCursor(ack.upTo, "payload.upTo")
        try store.acknowledgeSync(
          user: user, device: owner.device, messages: 0, updates: ack.upTo, retention: retention)
      case .syncAck(let mark):
        try Self.requireCursor(mark.lastSyncedMessage, "payload.lastSyncedMessage")
        try Self.requireCursor(mark.lastSyncedUpdate, "payload.lastSyncedUpdate")
        try store.acknowledgeSync(
          user: user, device: owner.device, messages: mark.lastSyncedMessage, updates: mark.lastSyncedUpdate,
          retention: retention)
      case .unknown(let type):
        throw APIError.badRequest("unknown event type '\(type)'", field: "type")
      }
    } catch let error as APIError {
      send(Self.errorEvent(code: error.code, message: error.message), to: socket)
    } catch let error as StoreError {
      let api = APIError(error)
      send(Self.errorEvent(code: api.code, message: api.message), to: socket)
    } catch {
      send(Self.errorEvent(code: "internal", message: "\(error)"), to: socket)
    }
  }

  /// `read` and `typing` name a user the caller exchanged messages with (not the caller).
  private func requireConversation(of user: Int64, with other: Int64, _ field: String) throws {
    guard other != user, try store.canSee(viewer: user, user: other) else {
      throw APIError.badRequest("field '\(field)': user \(other) has no conversation with you", field: field)
    }
  }

  /// A cursor of `sync_ack` or `updates_ack`: 0 or more.
  private static func requireCursor(_ value: Int64, _ field: String) throws {
    guard value >= 0 else {
      throw APIError.badRequest("field '\(field)': expected an integer of 0 or more, got \(value)", field: field)
    }
  }

  private static func errorEvent(code: String, message: String) -> String {
    WireJSON.string(ServerEvent.error(EventError(code: code, message: message)))
  }

  /// A status update to the sockets of the user it is for.
  private func push(_ update: RelayStatusUpdate) {
    let event = Self.event(update.kind.rawValue, update.json)
    for socket in socketsOfUser[update.userId] ?? [] { send(event, to: socket) }
  }

  /// Sends `text` to `socket`, after the commit when it reports a change of the open group.
  private func send(_ text: String, to socket: SocketID) {
    if let group = store.openGroup {
      effects.append(HeldEffect(kind: .event(text, socket), group: group))
    } else {
      transmit(text, to: socket)
    }
  }

  private func transmit(_ text: String, to socket: SocketID) {
    let close = faults.fire(.closeSocket)
    guard let server else { return }
    // `send` and `close` are thread-safe: a delayed event is sent from a timer.
    let deliver: @Sendable () -> Void = {
      server.send(text, to: socket)
      if close { server.close(socket, code: 1011) }
    }
    if faults.eventDelayMilliseconds > 0 {
      DispatchQueue.global().asyncAfter(
        deadline: .now() + .milliseconds(faults.eventDelayMilliseconds), execute: deliver)
    } else {
      deliver()
    }
  }

  /// `{"payload":…,"type":…}` around a payload already rendered: the bytes of
  /// `WireJSON.encode` of the event (keys sorted, no spaces).
  static func event(_ type: String, _ payload: [UInt8]) -> String {
    var event = JSONObjectWriter()
    event.raw("payload", payload)
    event.string("type", type)
    return event.text
  }
}

// MARK: - Decoding bodies

/// Decodes a JSON body; a decoding failure becomes a 400 naming the field and what it
/// expected, in the words of docs/protocol.md ("field 'toUserId': expected an integer,
/// got a string"), never Foundation's own text.
func decode<T: Decodable>(_ bytes: [UInt8]) throws -> T {
  do {
    return try JSONDecoder().decode(T.self, from: Data(bytes))
  } catch let error as DecodingError {
    throw BodyError.explain(error, in: bytes)
  }
}

/// Why a body did not decode, as the protocol's 400 says it.
enum BodyError {
  static func explain(_ error: DecodingError, in bytes: [UInt8]) -> APIError {
    switch error {
    case .keyNotFound(let key, let context):
      let path = Self.path(context.codingPath + [key])
      return APIError.badRequest("field '\(path)' is missing", field: path)
    case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
      let found = Self.found(in: context.debugDescription)
      let path = Self.path(context.codingPath)
      if path.isEmpty {
        return APIError.badRequest("the body: expected a JSON object, got \(found ?? "something else")", field: nil)
      }
      return APIError.badRequest(
        "field '\(path)': expected \(Self.expected(type))\(found.map { ", got \($0)" } ?? "")", field: path)
    case .dataCorrupted(let context):
      let path = Self.path(context.codingPath)
      if !path.isEmpty {
        return APIError.badRequest("field '\(path)': expected a valid value", field: path)
      }
      // Foundation names no field when a number does not fit a 64-bit integer or a
      // string is not valid UTF-8: found here in the bytes.
      if let (field, reason) = Self.numberThatIsNotAnInteger(in: bytes) ?? Self.invalidText(in: bytes) {
        return APIError.badRequest("field '\(field)': \(reason)", field: field)
      }
      return APIError.badRequest("the body is not valid JSON", field: nil)
    @unknown default:
      return APIError.badRequest("the body is not valid JSON", field: nil)
    }
  }

  /// `messages[2].toUserId`: list indices in brackets, keys after dots.
  static func path(_ keys: [any CodingKey]) -> String {
    var text = ""
    for key in keys {
      if let index = key.intValue {
        text += "[\(index)]"
      } else {
        text += (text.isEmpty ? "" : ".") + key.stringValue
      }
    }
    return text
  }

  /// The doc's word for what a field of `type` holds.
  static func expected(_ type: Any.Type) -> String {
    switch type {
    case is Int64.Type, is Int.Type, is Int32.Type, is UInt64.Type: "an integer"
    case is String.Type: "a string"
    case is Bool.Type: "true or false"
    // `[MessagePost]` is no `[Any]`: a list is known by its type's name.
    default: String(describing: type).hasPrefix("Array") ? "an array" : "an object"
    }
  }

  /// "a string" from Foundation's "… but found a string instead." (nil when it says otherwise).
  static func found(in description: String) -> String? {
    if description.contains("found null") || description.contains("null value") { return "null" }
    guard let range = description.range(of: "but found ") else { return nil }
    let rest = description[range.upperBound...]
    guard let end = rest.range(of: " instead") else { return nil }
    let kind = String(rest[..<end.lowerBound])
    switch kind {
    case "bool": return "true or false"
    case "number": return "a number"
    case "a dictionary": return "an object"
    default: return kind
    }
  }

  /// The first number in a valid JSON body that is not an integer of 64 bits (20.5,
  /// 2^63): the protocol has no other kind of number.
  static func numberThatIsNotAnInteger(in bytes: [UInt8]) -> (String, String)? {
    guard let root = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) else {
      return nil
    }
    func search(_ value: Any, _ path: String) -> (String, String)? {
      if let object = value as? [String: Any] {
        for key in object.keys.sorted() {
          if let found = search(object[key]!, path.isEmpty ? key : path + "." + key) { return found }
        }
      } else if let array = value as? [Any] {
        for (index, element) in array.enumerated() {
          if let found = search(element, path + "[\(index)]") { return found }
        }
      } else if let number = value as? NSNumber, !(value is Bool), String(number.int64Value) != number.stringValue {
        return (path, "expected an integer of at most 64 bits, got \(number.stringValue)")
      }
      return nil
    }
    return search(root, "")
  }

  /// A string with a byte sequence that is not UTF-8, or a lone surrogate escape
  /// (`\ud800`): the key whose value holds it, found by the nearest `"key":` before it.
  static func invalidText(in bytes: [UInt8]) -> (String, String)? {
    var offset: Int?
    var reason = "expected a string of valid UTF-8"
    if String(validating: bytes, as: UTF8.self) == nil {
      var index = 0
      while index < bytes.count && offset == nil {
        let length =
          bytes[index] < 0x80
          ? 1
          : bytes[index] >> 5 == 0b110
            ? 2
            : bytes[index] >> 4 == 0b1110
              ? 3
              : bytes[index] >> 3 == 0b11110 ? 4 : 0
        if length == 0 || index + length > bytes.count
          || String(validating: bytes[index..<index + length], as: UTF8.self) == nil
        {
          offset = index
        }
        index += max(length, 1)
      }
    } else if let lone = Self.loneSurrogate(in: bytes) {
      offset = lone
      reason = "expected a string without a lone surrogate (\\ud800-\\udfff must come in pairs)"
    }
    guard let offset, let key = Self.key(before: offset, in: bytes) else { return nil }
    return (key, reason)
  }

  /// Where a `\uD800`-`\uDFFF` escape stands without its pair.
  static func loneSurrogate(in bytes: [UInt8]) -> Int? {
    func unit(at index: Int) -> UInt16? {
      guard index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
      else { return nil }
      return UInt16(String(decoding: bytes[index + 2..<index + 6], as: UTF8.self), radix: 16)
    }
    var index = 0
    while index < bytes.count {
      if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count {
        if let value = unit(at: index) {
          if (0xD800...0xDBFF).contains(value) {
            guard let next = unit(at: index + 6), (0xDC00...0xDFFF).contains(next) else { return index }
            index += 12
            continue
          }
          if (0xDC00...0xDFFF).contains(value) { return index }
        }
        index += 2
        continue
      }
      index += 1
    }
    return nil
  }

  /// The name of the last `"key":` that starts before `offset`.
  static func key(before offset: Int, in bytes: [UInt8]) -> String? {
    var end = offset
    while end > 0 {
      end -= 1
      guard bytes[end] == UInt8(ascii: ":") else { continue }
      var close = end - 1
      while close >= 0 && (bytes[close] == 0x20 || bytes[close] == 0x09 || bytes[close] == 0x0A || bytes[close] == 0x0D)
      {
        close -= 1
      }
      guard close > 0, bytes[close] == UInt8(ascii: "\"") else { continue }
      var open = close - 1
      while open >= 0 && bytes[open] != UInt8(ascii: "\"") { open -= 1 }
      guard open >= 0 else { return nil }
      return String(decoding: bytes[open + 1..<close], as: UTF8.self)
    }
    return nil
  }
}

extension HTTPRequest {
  /// An integer query parameter within `range`, or `fallback` when absent.
  func int(_ name: String, default fallback: Int64, range: ClosedRange<Int64>) throws -> Int64 {
    guard let text = query[name] else { return fallback }
    guard let value = Int64(text), range.contains(value) else {
      throw APIError.badRequest(
        "query '\(name)': expected an integer from \(range.lowerBound) to \(range.upperBound)", field: name)
    }
    return value
  }
}

extension HTTPResponse {
  /// A JSON response rendered by hand (the hot paths; see RelayJSON.swift).
  static func json(_ status: Int, _ body: [UInt8]) -> HTTPResponse {
    HTTPResponse(status: status, contentType: "application/json", body: body, headers: [])
  }

  /// A JSON response: one of the protocol's types, encoded by `WireJSON`.
  static func wire(_ status: Int, _ body: some Encodable) -> HTTPResponse {
    HTTPResponse(status: status, contentType: "application/json", body: WireJSON.encode(body), headers: [])
  }
}
