import ChatProtocol
import ChatStore
import Foundation

/// The sync client's engine over one user's file: the outbox (seed 000's Messages
/// Scheduler, Message Timeout Controller and Pending Messages Provider), the real-time
/// socket (its Real-time Updates data source) and cursor sync.
///
/// Everything it stores goes through `ChatRepository`, one transaction per step, so a
/// kill at any point leaves the file consistent and the next start resumes: requests
/// left `SENT` are retried with the same request id, messages not yet confirmed as
/// delivered are acknowledged again, the cursor is where the last stored page left it.
///
/// The engine is isolated to the `DatabaseQueue` that owns its file's connection: its
/// code, and so every call it makes to SQLite (which can wait seconds for another
/// program's lock), runs on that queue's thread, never on Swift's cooperative threads.
///
/// ```swift
/// let engine = SyncEngine(repository: try ChatRepository.open(user: 1, in: "data"),
///                         http: .libwebsockets(base: relay, token: token),
///                         socket: .libwebsockets(url: socketURL, token: token))
/// let outcome = await engine.runOnce()        // or: await engine.run() until stop()
/// ```
public actor SyncEngine {
  /// Tunables; the defaults are the product's.
  public struct Options: Sendable {
    /// Conversations sending at once (each with up to two batches in flight, in order).
    public var conversationsInFlight = 4
    /// How long a POST may take before it counts as failed (the timeout controller).
    public var replyTimeout: Double = 10
    public var outboxBackoff = Backoff.outbox
    /// A request whose sends reached the relay and failed this many times (5xx, 429, no
    /// answer), or that is older than `maxAge` seconds when a send fails, fails for good:
    /// it waits for `chat-sync retry` or `delete` (seed 000's retry limit). Attempts that
    /// could not connect at all (a device offline) count toward the age only.
    public var maxAttempts = 10
    public var maxAge: Double = 86_400
    public var reconnectBackoff = Backoff.reconnect
    /// Delivery acknowledgements and read receipts wait this long to be sent together.
    public var batchDelay: Double = 0.05
    /// Messages per sync page.
    public var pageSize = 500
    /// Queued messages of one conversation sent in one request (`POST /v2/messages/batch`):
    /// the conversation's head and those due behind it, in order, in a body the relay
    /// takes (``RelayAPI/batchPrefix(_:)``). 300 drained a backlog of 2,000 at 4,608
    /// messages/s against 3,487 with 100 (median of 5 paired runs, the sender's CPU a
    /// message 100 µs against 155 µs; decision 0015).
    public var batchSize = 300
    /// A uniform value in 0..<1 for the jitter (tests pin it).
    public var random: @Sendable () -> Double = { Double.random(in: 0..<1) }
    /// How long a write to the file keeps being retried while another program (`chatdb
    /// vacuum`, `import`, `index apply` on a large file) holds its write lock past the
    /// connection's `busy_timeout`, in seconds.
    public var busyPatience: Double = 300
    /// Received media of these kinds, up to this many bytes, are downloaded at once
    /// (`run --auto-download-max`); others wait for `chat-sync fetch`. 0 downloads none.
    public var autoDownloadMax: Int64 = 5 << 20
    public var autoDownloadKinds: Set<MediaKind> = [.image]
    /// Bytes an upload's `PATCH` or a download's ranged `GET` carries.
    public var mediaChunkSize = 4 << 20
    /// Where log lines go (one per connection change, send and receipt). The lines of
    /// one batch (the messages of one answer or one run of events) come in one call,
    /// separated by newlines, so a process can write them with one system call.
    public var log: @Sendable (String) -> Void = { _ in }

    public init() {}
  }

  /// How `runOnce` ended.
  public enum Outcome: Sendable, Equatable {
    /// Synced, and nothing left to send.
    case done
    /// Synced, but some requests could not be sent (they wait in the outbox; `permanent`
    /// of them need `chat-sync retry`).
    case unsent(waiting: Int, permanent: Int)
    /// The relay could not be reached: nothing synced (requests stay queued).
    case unreachable(String)
    /// The relay refused the token, or it is another user's (the text says which).
    case unauthorized(String)
  }

  let repository: ChatRepository
  /// The owner of `repository`'s connection, and this actor's executor.
  let queue: DatabaseQueue
  public nonisolated var unownedExecutor: UnownedSerialExecutor { queue.asUnownedSerialExecutor() }
  let api: RelayAPI
  let connector: SocketConnector
  let options: Options
  let owner: Int64

  public private(set) var metrics = SyncMetrics()
  /// Contacts' presence and typing, as last reported (for display).
  public private(set) var presence: [Int64: ContactStatus] = [:]
  /// Until when each contact's typing signal holds (it expires unless renewed).
  private var typingUntil: [Int64: ContinuousClock.Instant] = [:]

  private var socket: (any RelaySocket)?
  private var socketTask: Task<Void, Never>?
  private var inFlight: [Int64: Task<Void, Never>] = [:]
  /// The edit or delete for everyone being sent (one at a time, oldest first).
  private var changeInFlight: Task<Void, Never>?
  let doorbell = Doorbell()
  /// Cuts a reconnect's backoff short: the user did something (`send`, `read` from
  /// another process) or a POST just got through, so the relay is worth trying now.
  private let reconnectBell = Doorbell()
  private(set) var stopping = false
  private(set) var halted: String?
  /// The download being made (one at a time, oldest wanted first).
  var downloadInFlight: Task<Void, Never>?
  /// When the next download may start after one failed, and how many failed in a row.
  var downloadRetry: (at: ContinuousClock.Instant, failures: Int)?
  /// Media whose download failed for good in this run (tried again at the next one).
  var downloadsGivenUp: Set<String> = []
  /// Ids acknowledged on the current socket and not yet confirmed.
  private var acksInFlight: Set<Int64> = []
  private var acksQueued: [Int64] = []
  private var flushScheduled = false
  private var receiptsScheduled = false
  /// The status-update cursor as stored; socket updates move it only when contiguous.
  private var updateCursor: Int64 = 0
  /// The message cursor as stored: every message of the owner's log up to it is in the
  /// file. Events and answers move it along the log (each names the message before it,
  /// `previousId`) only when contiguous.
  private var messageCursor: Int64 = 0
  /// Messages stored beyond a gap in the log, by the message before each: the cursor
  /// passes them once the gap fills (else the next catch-up brings them again, harmlessly).
  private var storedAhead: [Int64: Int64] = [:]
  /// Set when a cursor moved and the relay has not been told (`sync_ack`).
  private var syncAckDirty = false
  /// This device's relay id (`GET /v2/me`): its own messages' request ids are matched to
  /// its outbox; other devices' are not.
  private var deviceID: Int64?
  /// Updates applied from the socket beyond a gap in the sequence; the cursor passes
  /// them once the gap fills (else the next sync brings them again, harmlessly).
  private var appliedAhead: Set<Int64> = []
  /// When each request was first tried in this run (for the send latency).
  private var firstTried: [Int64: ContinuousClock.Instant] = [:]
  /// Set when a full cursor sync finished on the current connection.
  private var synced = false
  /// Set once the relay said the token is the owner's (`GET /v2/me`): nothing is sent before.
  private var identityChecked = false
  /// Read receipts sent on the current socket and not yet confirmed: conversation → upTo.
  private var receiptsInFlight: [Int64: Int64] = [:]
  /// When acknowledgements or receipts were last sent on the current socket.
  private var lastSent = ContinuousClock.now
  /// Unconfirmed acknowledgements and receipts are sent again after this long on one
  /// socket: the relay may have dropped them (a failed commit answers with an `error`).
  static let resendAfter: Duration = .seconds(5)
  /// The least time between two connects when a backoff is cut short, in seconds.
  static let reconnectFloor = 0.5

  public init(
    repository: sending ChatRepository, http: HTTPTransport, socket: SocketConnector, options: Options = Options()
  ) {
    self.owner = repository.ownerID
    self.queue = DatabaseQueue(repository.database)
    self.repository = repository
    self.api = RelayAPI(http: http)
    self.connector = socket
    self.options = options
  }

  func log(_ line: String) { options.log(line) }
  /// A batch's lines in one call (none: no call).
  func log(_ lines: [String]) { if !lines.isEmpty { options.log(lines.joined(separator: "\n")) } }

  // MARK: - Running

  /// Runs until `stop()`: keeps the socket up (reconnecting with backoff), syncs after
  /// every connect, and sends the outbox as requests come due or `nudge()` is called.
  public func run() async {
    start()
    await outboxLoop(untilIdle: false, deadline: nil)
    await finish()
  }

  /// Connects, syncs, sends what is due (retrying with backoff until `deadline`
  /// seconds have passed), waits briefly for acknowledgements, and returns.
  public func runOnce(deadline: Double = 30) async -> Outcome {
    do {
      try prepare()
    } catch {
      return .unreachable("\(error)")
    }
    do {
      try await checkIdentity()
    } catch let failure as Halt {
      await finish()
      return .unauthorized(failure.message)
    } catch {
      log("identity: \(error)")
      await finish()
      return .unreachable("\(error)")
    }
    // The socket is wanted for acknowledgements and receipts; HTTP does the rest.
    var events: Task<Void, Never>?
    if let socket = try? await connector.connect() {
      attach(socket)
      let mailbox = Mailbox(socket.messages)
      events = Task { while let frames = await mailbox.take() { await handle(frames) } }
    } else {
      log("socket: not connected; syncing over HTTP only")
    }
    defer { events?.cancel() }
    do {
      try await cursorSync()
    } catch SyncFailure.unauthorized(let reason) {
      log("sync: the relay refused the token: \(reason)")
      await finish()
      return .unauthorized("The relay refused the token: \(reason)")
    } catch {
      log("sync: \(error)")
      await finish()
      return .unreachable("\(error)")
    }
    try? repository.setSyncInfo("last_sync_at", Timestamp.now())
    await sendPendingReceipts()
    await outboxLoop(untilIdle: true, deadline: ContinuousClock.now.advanced(by: .milliseconds(Int64(deadline * 1000))))
    await settleAcknowledgements(timeout: 2)
    await finish()
    if let halted { return .unauthorized(halted) }
    let counts = (try? repository.outboxCounts()) ?? [:]
    // Edits and deletes waiting count as the outbox's requests do.
    let changes = (try? repository.messageChanges()) ?? []
    let permanent = (counts["permanent"] ?? 0) + changes.filter { $0.nextAttemptAt == nil }.count
    let waiting =
      counts.values.reduce(0, +) - (counts["permanent"] ?? 0) + changes.filter { $0.nextAttemptAt != nil }.count
    return waiting + permanent == 0 ? .done : .unsent(waiting: waiting, permanent: permanent)
  }

  /// Ends `run()`: in-flight sends are cancelled, the socket closes.
  ///
  /// A send cancelled before its answer came leaves its request `SENT`: the next run
  /// sends it again with the same request id and the relay answers from its
  /// deduplication window, so nothing the relay accepted is lost, and a stop never
  /// waits for a POST's reply timeout.
  public func stop() {
    stopping = true
    socketTask?.cancel()
    socket?.close()
    for task in inFlight.values { task.cancel() }
    changeInFlight?.cancel()
    downloadInFlight?.cancel()
    doorbell.ring()
    reconnectBell.ring()
  }

  /// Something changed in the file from outside (a `chat-sync send`, `read`): look again.
  public func nudge() {
    doorbell.ring()
    if socket == nil { reconnectBell.ring() }
  }

  private func start() {
    do {
      try prepare()
    } catch {
      log("store: \(error)")
    }
    socketTask = Task { await socketLoop() }
  }

  /// Before anything is sent: requests a killed run left in flight are due again, and
  /// the owner has a profile row (messages reference it; the real one replaces the
  /// stand-in at the first sync).
  private func prepare() throws {
    let resumed = try repository.resumeInterruptedSends() + repository.resumeInterruptedChanges()
    if resumed > 0 { log("outbox: \(resumed) request(s) left in flight by an earlier run are due again") }
    let cursor = try repository.syncCursor()
    updateCursor = cursor.updates
    messageCursor = cursor.messages
    if try repository.user(owner) == nil { try repository.addPlaceholder(User(id: owner, name: "user \(owner)")) }
  }

  private func finish() async {
    for task in inFlight.values { await task.value }
    await changeInFlight?.value
    await downloadInFlight?.value
    socketTask?.cancel()
    socket?.close()
    socket = nil
    if let task = socketTask { await task.value }
    try? repository.setSyncInfo("sync_state", "stopped at \(Timestamp.now())")
  }

  // MARK: - The socket

  private func socketLoop() async {
    var failures = 0
    while !stopping && !Task.isCancelled {
      var connected = false
      do {
        try await checkIdentity()
        let socket = try await connector.connect()
        connected = true
        attach(socket)
        try? repository.setSyncInfo("sync_state", "connected since \(Timestamp.now())")
        do {
          try await cursorSync()
        } catch {
          // Events are trusted only after a catch-up: one that failed would leave what
          // arrived while away unfetched behind them. Reconnect (with backoff) and sync again.
          socket.close()
          detach()
          throw error
        }
        synced = true
        failures = 0
        try? repository.setSyncInfo("last_sync_at", Timestamp.now())
        await sendPendingReceipts()
        if (try? repository.retryFailedNow()) ?? 0 > 0 { log("outbox: the relay is back; failed requests are due now") }
        doorbell.ring()
        let resender = Task { [weak self] in
          while !Task.isCancelled {
            try? await Task.sleep(for: Self.resendAfter)
            await self?.resendUnconfirmed()
          }
        }
        let mailbox = Mailbox(socket.messages)
        while let frames = await mailbox.take() { await handle(frames) }
        resender.cancel()
        detach()
        try? repository.setSyncInfo("sync_state", "disconnected at \(Timestamp.now())")
        log("socket: closed")
      } catch let failure as Halt {
        halt(failure.message)
        return
      } catch SyncFailure.unauthorized(let reason) {
        halt("The relay refused the token: \(reason)")
        return
      } catch let refused as SocketRefused where refused.status == 401 {
        halt("The relay refused the token (HTTP 401)")
        return
      } catch let refused as TransportError where refused.certificate {
        halt(refused.message)
        return
      } catch {
        log(
          connected
            ? "sync: \(error); reconnecting to sync again before trusting events" : "socket: cannot connect: \(error)")
      }
      if stopping || Task.isCancelled { return }
      failures += 1
      let delay = options.reconnectBackoff.delay(attempt: failures, random: options.random)
      log(String(format: "socket: reconnecting in %.1f s", delay))
      // Woken early, it still waits the backoff's first step, so rings cannot make it spin.
      let waitStarted = ContinuousClock.now
      await reconnectBell.wait(timeout: delay)
      let floor = Duration.milliseconds(Int64(min(delay, Self.reconnectFloor) * 1000))
      let waited = waitStarted.duration(to: .now)
      if waited < floor { try? await Task.sleep(for: floor - waited) }
    }
  }

  /// Why the engine stops for good: the token is refused or another user's.
  struct Halt: Error {
    var message: String
  }

  /// Asks the relay whose token this is (once per engine), before anything is sent or
  /// stored: a token of another user must not send this file's outbox under their name.
  private func checkIdentity() async throws {
    guard !identityChecked else { return }
    do {
      let me = try await api.me(requiring: owner)
      deviceID = me.device
      identityChecked = true
      doorbell.ring()
      try await patiently { try repository.upsert(me.user) }
    } catch SyncFailure.unauthorized(let reason) {
      throw Halt(message: "The relay refused the token: \(reason)")
    } catch let wrong as WrongUserToken {
      throw Halt(message: wrong.description)
    } catch let refused as TransportError where refused.certificate {
      // Another try meets the same certificate: nothing is sent to a relay not verified.
      throw Halt(message: refused.message)
    }
  }

  private func attach(_ socket: any RelaySocket) {
    self.socket = socket
    metrics.connections += 1
    acksInFlight = []
    receiptsInFlight = [:]
    synced = false
    log("socket: connected\(metrics.connections > 1 ? " (reconnect \(metrics.reconnects))" : "")")
  }

  private func detach() {
    socket = nil
    // Unconfirmed acknowledgements may be lost with the socket: the messages are still
    // pending in the file and are acknowledged again after the next connect; the same
    // holds for read receipts.
    acksInFlight = []
    receiptsInFlight = [:]
    synced = false
  }

  private func halt(_ reason: String) {
    halted = reason
    log("stopped: \(reason)")
    stop()
  }

  func handle(_ text: String) async { await handle([text]) }

  /// Handles frames in order; consecutive new messages are stored together, and so are
  /// consecutive status updates.
  func handle(_ frames: [String]) async {
    var events: [RelayEvent] = []
    for text in frames {
      if let event = RelayEvent.parse(text) {
        events.append(event)
      } else {
        log("socket: ignored a frame that is not an event")
      }
    }
    var next = 0
    while next < events.count {
      do {
        if case .newMessage = events[next] {
          var messages: [RelayMessage] = []
          while next < events.count, case .newMessage(let message) = events[next] {
            messages.append(message)
            next += 1
          }
          try await store(messages.map { $0.model(onDevice: deviceID) }, previousIds: messages.map(\.previousId))
          noteDroppedAttachments(messages)
          queueAcks(Array(Set(messages.filter { $0.fromUserId != owner }.map(\.messageId))).sorted())
        } else if events[next].statusUpdate != nil {
          var updates: [(StatusUpdate, MessageStatus?)] = []
          while next < events.count, let update = events[next].statusUpdate {
            updates.append(update)
            next += 1
          }
          try await apply(updates)
        } else {
          next += 1
          try await handle(events[next - 1])
        }
      } catch {
        log("store: \(error)")
      }
    }
  }

  private func handle(_ event: RelayEvent) async throws {
    switch event {
    case .newMessage, .delivered, .read, .readElsewhere, .edited, .deleted:
      preconditionFailure("handled in runs by handle(_:)")
    case .contactStatus(let status):
      presence[status.userId] = status
      if status.typing == true {
        typingUntil[status.userId] = .now.advanced(
          by: .milliseconds(status.typingExpiresInMs ?? ContactStatus.typingWindowMilliseconds))
      } else {
        typingUntil[status.userId] = nil
      }
      if let seen = status.lastSeenAt {
        try await patiently { try repository.updatePresence(of: status.userId, lastConnectedAt: seen) }
      }
      log("contact \(status.userId): \(status.online ? "online" : "offline")\(status.typing == true ? ", typing" : "")")
    case .deliveryAcknowledged(let ids):
      try await patiently { try repository.confirmDelivered(ids) }
      acksInFlight.subtract(ids)
    case .readAcknowledged(let conversation, let upTo):
      try await patiently { try repository.clearReadReceipt(conversation: conversation, upTo: upTo) }
      if let sent = receiptsInFlight[conversation], sent <= upTo { receiptsInFlight[conversation] = nil }
    case .error(let code, let message, let ids):
      log("relay error event: \(code): \(message)")
      // Nothing on the relay to acknowledge: acknowledging them again would loop.
      try await patiently { try repository.forgetDeliveryAcks(ids) }
      acksInFlight.subtract(ids)
    case .unknown(let type):
      log("socket: ignored an unknown event '\(type)'")
    }
  }

  /// Status updates for the owner's messages (`status`), or conversations the owner read
  /// on another device (nil), in one transaction; the update cursor moves (and the relay
  /// is told) only when no earlier update is missing.
  private func apply(_ updates: [(StatusUpdate, MessageStatus?)]) async throws {
    var ahead = appliedAhead
    for (update, _) in updates where update.sequence > updateCursor { ahead.insert(update.sequence) }
    var next = updateCursor
    while ahead.remove(next + 1) != nil { next += 1 }
    // One transaction: the updates and, when they closed a gap, the cursor past them.
    let erased = try await patiently { [next, updateCursor] in
      try repository.applyUpdates(updates.map(Self.change), sequence: next > updateCursor ? next : nil)
    }
    if erased { await eraseResidue() }
    appliedAhead = ahead
    if next > updateCursor {
      updateCursor = next
      syncAckDirty = true
      scheduleFlush()
    }
    log(
      updates.map { update, status in
        switch (update.type, status) {
        case (.messageEdited?, _): "message \(update.messageId): edited (version \(update.version ?? 0))"
        case (.messageDeleted?, _): "message \(update.messageId): deleted for everyone"
        case (_, let status?): "message \(update.messageId): \(status.rawValue.lowercased())"
        case (_, nil): "conversation \(update.conversationId): read up to \(update.messageId) on another device"
        }
      })
  }

  /// An update as the file applies it.
  static func change(_ update: StatusUpdate, _ status: MessageStatus?) -> ChatRepository.StatusChange {
    var change = ChatRepository.StatusChange(
      status: status, messageID: update.messageId, conversation: update.conversationId)
    switch update.type {
    case .messageEdited?: change.edit = (update.version ?? 0, update.content, update.at)
    case .messageDeleted?: change.deletedAt = update.at
    default: break
    }
    return change
  }

  /// After a delete for everyone: the erased text leaves the search index's segments and
  /// the WAL too (``ChatRepository/eraseResidue()``).
  private func eraseResidue() async {
    do {
      if try await patiently({ try repository.eraseResidue() }) == false {
        log("store: a reader kept the WAL from being truncated; erased text may stay in it until the next checkpoint")
      }
    } catch {
      log("store: \(error)")
    }
  }

  /// Where the message cursor gets to once message `id`, which follows `previousId` in the
  /// owner's log, is stored (nil when it does not move), and what is still stored ahead.
  private func cursorAfter(storing id: Int64, previousId: Int64?) -> (cursor: Int64?, ahead: [Int64: Int64]) {
    Self.advance(cursor: messageCursor, ahead: storedAhead, storing: id, previousId: previousId)
  }

  /// ``cursorAfter(storing:previousId:)`` from a given cursor and what is stored ahead of it.
  static func advance(cursor: Int64, ahead: [Int64: Int64], storing id: Int64, previousId: Int64?) -> (
    cursor: Int64?, ahead: [Int64: Int64]
  ) {
    var ahead = ahead
    if let previousId, id > cursor { ahead[previousId] = id }
    var next = cursor
    while let following = ahead.removeValue(forKey: next) { next = following }
    if ahead.contains(where: { $0.key <= next }) { ahead = ahead.filter { $0.key > next } }
    // A gap that never fills (an event lost with its socket) waits for the next catch-up;
    // meanwhile what piles up behind it is bounded.
    if ahead.count > 10_000 { ahead = [:] }
    return (next > cursor ? next : nil, ahead)
  }

  /// ``advance(cursor:ahead:storing:previousId:)`` over messages stored together, in
  /// order: each step starts where the one before left the cursor.
  static func advance(cursor: Int64, ahead: [Int64: Int64], storing placed: [(id: Int64, previousId: Int64?)]) -> (
    cursor: Int64?, ahead: [Int64: Int64]
  ) {
    var place = cursor
    var ahead = ahead
    for (id, previousId) in placed {
      let step = advance(cursor: place, ahead: ahead, storing: id, previousId: previousId)
      ahead = step.ahead
      if let next = step.cursor { place = next }
    }
    return (place > cursor ? place : nil, ahead)
  }

  /// Takes the cursor `cursorAfter` computed, once what it covers is stored.
  private func advanceCursor(to cursor: Int64?, ahead: [Int64: Int64]) {
    storedAhead = ahead
    guard let cursor, cursor > messageCursor else { return }
    messageCursor = cursor
    syncAckDirty = true
    scheduleFlush()
  }

  // MARK: - Receiving

  /// Attachments the file cannot store (``RelayAttachment/model``) are left out of their
  /// message, which is kept: said in the log.
  private func noteDroppedAttachments(_ messages: [RelayMessage]) {
    log(
      messages.compactMap { message in
        let dropped = (message.attachments ?? []).filter { $0.model == nil }
        guard !dropped.isEmpty else { return nil }
        return "message \(message.messageId): an attachment left out (\(dropped.count) with a malformed sha256 or size)"
      })
  }

  /// Stores messages (fetching unknown senders' profiles first, in the same transaction),
  /// counting the ones already stored. `cursor` is where a catch-up page leaves the
  /// message cursor; `previousIds` the events' places in the log (see ``advance``).
  private func store(_ messages: [Message], cursor: Int64? = nil, previousIds: [Int64?] = []) async throws {
    let contacts = try repository.unknownUsers(messages.map { $0.conversationID(owner: owner) })
    var users: [User] = []
    if !contacts.isEmpty {
      users = (try? await api.profiles(contacts)) ?? []
      // Nothing waits forever for a profile: a stand-in now, the real one later.
      for id in contacts where !users.contains(where: { $0.id == id }) {
        users.append(User(id: id, name: "user \(id)"))
      }
    }
    var moved = (cursor: cursor, ahead: storedAhead)
    if cursor == nil, previousIds.count == messages.count {
      // Events: each names the message before it in the log.
      moved = Self.advance(
        cursor: messageCursor, ahead: storedAhead, storing: zip(messages, previousIds).map { ($0.id, $1) })
    }
    let fresh = try await patiently { [moved] in
      try repository.receive(messages, users: users, messageCursor: moved.cursor)
    }
    metrics.received += messages.count
    metrics.duplicatesDropped += messages.count - fresh.count
    await wantDownloads(of: fresh)
    if let page = cursor {
      // A catch-up page: the file's cursor moved there; what was stored ahead may now follow it.
      messageCursor = max(messageCursor, page)
      let following = cursorAfter(storing: messageCursor, previousId: nil)
      if let next = following.cursor { try await patiently { try repository.raiseMessageCursor(to: next) } }
      advanceCursor(to: following.cursor, ahead: following.ahead)
    } else {
      advanceCursor(to: moved.cursor, ahead: moved.ahead)
    }
    log(
      fresh.map { message in
        message.fromUserID != owner
          ? "received message \(message.id) from user \(message.fromUserID)"
          : message.requestID != nil
            // This device's own, in a catch-up that came before the POST's answer.
            ? "stored message \(message.id) to user \(message.toUserID), sent from this device"
            : "stored message \(message.id) to user \(message.toUserID), sent from another device"
      })
  }

  private func cursorSync() async throws {
    var pages = 0
    var page = try await api.sync(after: try repository.syncCursor(), limit: options.pageSize)
    while true {
      // The next page is fetched and decoded while this one is stored: detached, so it
      // does not wait for this thread; the relay is told only what is stored (`after`
      // asks for the page further on).
      let stored = try repository.syncCursor()
      let next: Task<RelayAPI.SyncPage, any Error>? =
        page.hasMore
        ? Task.detached { [api, from = page.cursor, limit = options.pageSize] in
          try await api.sync(after: stored, from: from, limit: limit)
        } : nil
      defer { next?.cancel() }
      try await store(page.messages.map { $0.model(onDevice: deviceID) }, cursor: page.cursor)
      noteDroppedAttachments(page.messages)
      let changes = page.updates.map { update in
        let status: MessageStatus? =
          switch update.type {
          case .messageRead: .read
          case .conversationRead, .messageEdited, .messageDeleted: nil
          case .messageDelivered, nil: .delivered
          }
        return Self.change(update, status)
      }
      if !changes.isEmpty {
        let erased = try await patiently {
          try repository.applyUpdates(changes, sequence: page.updates.map(\.sequence).max())
        }
        if erased { await eraseResidue() }
      }
      updateCursor = try repository.syncCursor().updates
      appliedAhead = appliedAhead.filter { $0 > updateCursor }
      pages += 1
      guard let next else { break }
      page = try await next.value
    }
    // Contacts still shown by their stand-in name get their real profile once the relay shows it.
    if let standIns = try? repository.standInContacts(), !standIns.isEmpty,
      let users = try? await api.profiles(standIns), !users.isEmpty
    {
      try await patiently { try repository.receive([], users: users, messageCursor: nil) }
      log("profiles: \(users.count) contact(s) no longer shown by a stand-in name")
    }
    // Everything not yet confirmed, including what earlier runs stored: acknowledged now.
    var after: Int64 = 0
    while true {
      let ids = try repository.unacknowledgedIncoming(after: after, limit: 500)
      queueAcks(ids)
      guard ids.count == 500, let last = ids.last else { break }
      after = last
    }
    // The relay learns where the catch-up left this device (its acknowledged place).
    syncAckDirty = true
    flush()
    log("sync: \(pages) page(s); cursor \(try repository.syncCursor().messages)")
  }

  // MARK: - Acknowledgements and receipts (batched)

  private func queueAcks(_ ids: [Int64]) {
    let new = ids.filter { !acksInFlight.contains($0) }
    guard !new.isEmpty else { return }
    acksQueued += new
    scheduleFlush()
  }

  private func scheduleFlush() {
    guard !flushScheduled else { return }
    flushScheduled = true
    Task {
      try? await Task.sleep(for: .milliseconds(Int64(options.batchDelay * 1000)))
      flush()
    }
  }

  private func flush() {
    flushScheduled = false
    guard let socket else { return }
    lastSent = .now
    var queued = acksQueued.filter { !acksInFlight.contains($0) }
    acksQueued = []
    while !queued.isEmpty {
      let batch = Array(queued.prefix(500))
      queued.removeFirst(batch.count)
      socket.send(.deliveryAck(MessageIDs(messageIds: batch)))
      acksInFlight.formUnion(batch)
    }
    if syncAckDirty {
      socket.send(.syncAck(SyncMark(lastSyncedMessage: messageCursor, lastSyncedUpdate: updateCursor)))
      syncAckDirty = false
    }
  }

  private func settleAcknowledgements(timeout: Double) async {
    flush()
    let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int64(timeout * 1000)))
    while socket != nil && !(acksInFlight.isEmpty && receiptsInFlight.isEmpty) && ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(20))
    }
  }

  /// Read receipts queued in the file (by this process or `chat-sync read`) go out. They
  /// stay in the file until the relay's `read_acknowledged` names a mark at or above them.
  /// The acknowledgements queued go first, on the same socket: the relay's read mark
  /// stops below any message it has not seen acknowledged.
  private func sendPendingReceipts() async {
    flush()
    guard let socket, let receipts = try? repository.pendingReadReceipts() else { return }
    for receipt in receipts where receipt.sendable > 0 && receiptsInFlight[receipt.conversation] != receipt.sendable {
      socket.send(.read(ReadMark(conversationId: receipt.conversation, upTo: receipt.sendable)))
      receiptsInFlight[receipt.conversation] = receipt.sendable
      lastSent = .now
      log("read receipt: conversation \(receipt.conversation) up to \(receipt.sendable)")
    }
  }

  /// Acknowledgements and receipts still unconfirmed a while after they were sent go
  /// again (the relay answers each; one it dropped is otherwise repeated only after a
  /// reconnect).
  private func resendUnconfirmed() async {
    guard socket != nil, synced, lastSent.duration(to: .now) >= Self.resendAfter else { return }
    if !acksInFlight.isEmpty {
      acksQueued += acksInFlight.sorted()
      acksInFlight = []
    }
    receiptsInFlight = [:]
    await sendPendingReceipts()
  }

  /// Marks a conversation read and sends the receipt (batched with others).
  @discardableResult
  public func markRead(conversation: Int64) async throws -> Int64? {
    guard let highest = try repository.markRead(conversation: conversation) else { return nil }
    try repository.queueReadReceipt(conversation: conversation, upTo: highest)
    await sendPendingReceipts()
    return highest
  }

  /// Tells `user` this client is (or stopped) typing; false when no socket is open.
  @discardableResult
  public func typing(to user: Int64, _ typing: Bool = true) -> Bool {
    guard let socket else { return false }
    socket.send(.typing(TypingSignal(toUserId: user, typing: typing)))
    return true
  }

  /// The contacts typing now: their signal arrived and has not expired.
  public func typingContacts() -> [Int64] {
    let now = ContinuousClock.now
    typingUntil = typingUntil.filter { $0.value > now }
    return typingUntil.keys.sorted()
  }

  /// Why the engine stopped on its own (the relay refused the token, or it is another
  /// user's), as one line for the user, if it did.
  public var haltReason: String? { halted }

  /// Sends the queued read receipts after a short pause, so several marks in a row
  /// (`chat-sync read` on a few conversations) go out together.
  public func scheduleReceipts() {
    if socket == nil { reconnectBell.ring() }
    guard !receiptsScheduled else { return }
    receiptsScheduled = true
    Task {
      try? await Task.sleep(for: .milliseconds(Int64(options.batchDelay * 4_000)))
      receiptsScheduled = false
      await sendPendingReceipts()
    }
  }

  /// Whether the socket is up and the sync after its connect has finished.
  public var isSynced: Bool { socket != nil && synced }

  // MARK: - Waiting out another writer

  /// Runs one write to the file, retried while another program holds the file's write
  /// lock longer than `busy_timeout`, for up to `busyPatience` seconds. `chatdb vacuum`
  /// or `import` on a large file can hold it that long; a message received meanwhile
  /// must not be dropped until the next reconnect (and a user must not see SQLite's
  /// "database is locked"). Stopping (SIGTERM) ends the wait: what was not written is
  /// still on the relay, unacknowledged, and comes again at the next run.
  @discardableResult
  func patiently<T>(_ write: () throws -> T) async throws -> T {
    try await queue.write(
      retryingBusyFor: options.busyPatience, isStopping: { stopping },
      onWait: { log("store: another program is writing the file; waiting for it") }, write)
  }

  // MARK: - The outbox

  private func outboxLoop(untilIdle: Bool, deadline: ContinuousClock.Instant?) async {
    while !stopping {
      let wait = drainStep()
      if untilIdle && inFlight.isEmpty && changeInFlight == nil && downloadInFlight == nil {
        guard let wait else { return }
        if let deadline, ContinuousClock.now.advanced(by: .milliseconds(Int64(wait * 1000))) > deadline { return }
      }
      if let deadline, ContinuousClock.now >= deadline { return }
      await doorbell.wait(timeout: wait)
    }
  }

  /// Starts the sends that are due; returns the seconds until the next one is (nil: none).
  private func drainStep() -> Double? {
    guard halted == nil, identityChecked else { return nil }
    let heads: [MessageRequest]
    do {
      heads = try repository.outboxHeads()
    } catch {
      log("outbox: \(error)")
      return 1
    }
    let now = Date()
    var next: Double?
    for head in heads where inFlight[head.toUserID] == nil {
      guard let dueText = head.nextAttemptAt, let due = Timestamp.milliseconds(from: dueText) else { continue }
      let wait = Double(due) / 1000 - now.timeIntervalSince1970
      if wait <= 0 && inFlight.count < options.conversationsInFlight {
        let request = head
        inFlight[head.toUserID] = Task { await send(request) }
      } else {
        next = min(next ?? .infinity, max(wait, 0.01))
      }
    }
    if let wait = drainChanges() { next = min(next ?? .infinity, wait) }
    if let wait = drainDownloads() { next = min(next ?? .infinity, wait) }
    return next
  }

  /// Starts the edit or delete for everyone that is due, if none is in flight; returns the
  /// seconds until the next one is due (nil: none, or one in flight). One at a time, in
  /// the order queued: each names a message the relay already holds, so none waits for
  /// the new messages queued before it, and a message's edits reach the relay in order.
  private func drainChanges() -> Double? {
    guard changeInFlight == nil else { return nil }
    do {
      let now = Date().timeIntervalSince1970
      var next: Double?
      for head in try repository.changeHeads() {
        guard let text = head.nextAttemptAt, let at = Timestamp.milliseconds(from: text) else { continue }
        let wait = Double(at) / 1000 - now
        if wait <= 0 {
          changeInFlight = Task { await send(head) }
          return nil
        }
        next = min(next ?? .infinity, max(wait, 0.01))
      }
      return next
    } catch {
      log("outbox: \(error)")
      return 1
    }
  }

  /// Sends one change and settles it: applied here as the relay numbered it (the same
  /// update every other device gets), retried with the outbox's backoff, or failed for
  /// good with the relay's reason (`chat-sync status` shows it).
  private func send(_ change: MessageChange) async {
    defer {
      changeInFlight = nil
      doorbell.ring()
    }
    let what = change.kind == .edit ? "edit" : "delete"
    do {
      try await patiently { try repository.markChangeSent(change.requestID, replyTimeout: options.replyTimeout + 5) }
      switch await api.change(change, timeout: options.replyTimeout) {
      case .applied(let update):
        if change.kind == .edit {
          try await patiently {
            try repository.applyEdit(
              of: change.messageID, version: update.version ?? 0, content: update.content ?? change.content ?? "",
              editedAt: update.at, settling: change.requestID)
          }
          log("sent the \(what) of message \(change.messageID) (version \(update.version ?? 0))")
        } else {
          try await patiently {
            try repository.applyDelete(of: change.messageID, deletedAt: update.at, settling: change.requestID)
          }
          await eraseResidue()
          log("sent the delete of message \(change.messageID) for everyone")
        }
      case .failed(.rejected(let reason)):
        try await patiently { try repository.recordChangeFailure(change.requestID, reason: reason, retryAt: nil) }
        log("the \(what) of message \(change.messageID) was refused for good: \(reason)")
      case .failed(.unauthorized(let reason)):
        try await patiently { try repository.recordChangeFailure(change.requestID, reason: reason, retryAt: Date()) }
        if halted == nil { halt("The relay refused the token: \(reason)") }
      case .failed(let outcome):
        var reason = "\(outcome)"
        var retryAfter: Double?
        if case .retryable(let text, let after) = outcome { (reason, retryAfter) = (text, after) }
        if case .unreachable(let text) = outcome { reason = text }
        if stopping { return }  // still SENT: due again at the next run, with the same request id
        let attempts = change.failCount + 1
        let retryAt: Date? =
          attempts >= options.maxAttempts
          ? nil
          : Date().addingTimeInterval(
            retryAfter ?? options.outboxBackoff.delay(attempt: attempts, random: options.random))
        try await patiently {
          try repository.recordChangeFailure(
            change.requestID, reason: retryAt == nil ? "gave up after \(attempts) attempts: \(reason)" : reason,
            retryAt: retryAt)
        }
        log(
          "the \(what) of message \(change.messageID) failed (\(reason))\(retryAt == nil ? " for good" : "; it is retried")"
        )
      }
    } catch {
      log("outbox: \(error)")
    }
  }

  /// A batch sent and not settled yet.
  private struct Flight {
    var batch: [MessageRequest]
    var answer: Task<[RelayAPI.PostOutcome], Never>
    /// The due request behind a full batch: where the next one starts (nil: none due).
    var following: MessageRequest?
  }

  /// Sends the head of a conversation and the requests due behind it, in batches of up to
  /// `batchSize` in order, with up to two full batches in flight: the second is sent while the
  /// first's answer is on its way and names the first's last request (`after`), so the
  /// relay tries it only once that one is stored (`409 out_of_order` otherwise: it goes
  /// back to due and follows the first). Batches are settled in the order they were sent;
  /// after one that was not accepted whole, no new batch starts here (the outbox loop
  /// sends what is due again, with its backoff).
  private func send(_ head: MessageRequest) async {
    defer {
      inFlight[head.toUserID] = nil
      doorbell.ring()
    }
    var flights: [Flight] = []
    var next: MessageRequest? = head
    while true {
      if flights.count < 2, let start = next, !stopping, halted == nil {
        next = nil
        if let flight = await launch(from: start, after: flights.last?.batch.last?.requestID) {
          flights.append(flight)
          next = flight.following
          continue
        }
      }
      guard !flights.isEmpty else { return }
      if await !land(flights.removeFirst()) { next = nil }
    }
  }

  /// Marks the due requests from `start` on SENT (the durable timeout) and sends them.
  private func launch(from start: MessageRequest, after: Int64?) async -> Flight? {
    var batch: [MessageRequest]
    var following: MessageRequest?
    var attachments: [AttachmentPost]?
    do {
      // One more than a batch: the extra one, if due, starts the next batch.
      var due = options.batchSize > 1 ? try repository.dueRequests(after: start, limit: options.batchSize + 1) : [start]
      let fits = RelayAPI.batchPrefix(due.prefix(options.batchSize))
      if due.count > fits { following = due[fits] }
      due.removeLast(due.count - fits)
      // A request with media goes alone, in a post of its own once its media is
      // uploaded, never behind a batch in flight; a batch stops before it.
      let withMedia = try repository.requestsWithAttachments(from: due[0].requestID, to: due[due.count - 1].requestID)
      if withMedia.contains(start.requestID) {
        guard after == nil else { return nil }
        following = due.count > 1 ? due[1] : following
        due = [start]
        guard let uploaded = await uploadAttachments(of: start) else { return nil }
        attachments = uploaded
      } else if let cut = due.firstIndex(where: { withMedia.contains($0.requestID) }) {
        following = due[cut]
        due.removeLast(due.count - cut)
      }
      // The durable timeout: if this process dies now the requests are due again after it.
      let marked = try await patiently { [due] in
        try repository.markSent(due.map(\.requestID), replyTimeout: options.replyTimeout + 5)
      }
      batch = due.filter { marked.contains($0.requestID) }
    } catch {
      log("outbox: \(error)")
      return nil
    }
    guard !batch.isEmpty else { return nil }
    for request in batch {
      if request.failCount > 0 || request.status == .sent { metrics.retries += 1 }
      if firstTried[request.requestID] == nil { firstTried[request.requestID] = .now }
    }
    let api = api
    let timeout = options.replyTimeout
    let answer = Task { [batch] in
      batch.count == 1 && after == nil
        ? [await api.post(batch[0], attachments: attachments, timeout: timeout)]
        : await api.post(batch: batch, after: after, timeout: timeout)
    }
    return Flight(batch: batch, answer: answer, following: following)
  }

  /// Waits for a flight's answer, stores what was accepted and settles each request;
  /// whether every one was accepted.
  private func land(_ flight: Flight) async -> Bool {
    let batch = flight.batch
    // The post runs in a task of its own (two go at once): stopping cancels it from here.
    var outcomes = await withTaskCancellationHandler {
      await flight.answer.value
    } onCancel: {
      flight.answer.cancel()
    }
    // The accepted ones are stored together, the cursor following them along the log.
    var accepted: [(message: Message, requestID: Int64)] = []
    var placed: [(id: Int64, previousId: Int64?)] = []
    for (request, outcome) in zip(batch, outcomes) {
      guard case .accepted(let message, let previousId, _) = outcome else { continue }
      accepted.append((message, request.requestID))
      placed.append((message.id, previousId))
    }
    let moved = Self.advance(cursor: messageCursor, ahead: storedAhead, storing: placed)
    if !accepted.isEmpty {
      do {
        try await patiently { [accepted, moved] in
          try repository.acknowledge(accepted, messageCursor: moved.cursor)
        }
        advanceCursor(to: moved.cursor, ahead: moved.ahead)
        if socket == nil { reconnectBell.ring() }
      } catch {
        log("outbox: \(error)")
        // Not stored: each is sent again (the relay replays it by its request id).
        outcomes = outcomes.map {
          if case .accepted = $0 { .retryable("the answer could not be stored: \(error)", retryAfter: nil) } else { $0 }
        }
      }
    }
    // Not tried by the relay: due again now, behind the batch before it (no attempt counted).
    let untried = zip(batch, outcomes).filter { if case .outOfOrder = $0.1 { true } else { false } }
    if let first = untried.first, case .outOfOrder(let reason) = first.1 {
      do {
        try await patiently { [untried] in try repository.requeue(untried.map(\.0.requestID)) }
        log(
          "send of \(untried.count) request(s) from \(first.0.requestID) on waits for the batch before it (\(reason))")
      } catch {
        log("outbox: \(error)")
      }
    }
    // A batch that failed as a whole is tried again as a whole: every request waits the
    // head's delay (each its own would split it).
    var sharedDelay: Double?
    if batch.count > 1, outcomes.allSatisfy({ if case .retryable = $0 { true } else { false } }),
      case .retryable(_, let retryAfter) = outcomes[0]
    {
      sharedDelay = retryAfter ?? options.outboxBackoff.delay(attempt: batch[0].failCount + 1, random: options.random)
    }
    let retryAt = sharedDelay.map { Date().addingTimeInterval($0) }
    var sent: [String] = []
    for (request, outcome) in zip(batch, outcomes) {
      switch outcome {
      case .outOfOrder: continue
      case .accepted(let message, _, let replayed): sent.append(countSent(request, as: message, replayed: replayed))
      default: await settle(request, outcome, retryAt: retryAt)
      }
    }
    log(sent)
    return outcomes.allSatisfy { if case .accepted = $0 { true } else { false } }
  }

  /// Counts an accepted request (stored already); its log line.
  private func countSent(_ request: MessageRequest, as message: Message, replayed: Bool) -> String {
    metrics.sent += 1
    if replayed { metrics.replayed += 1 }
    if let started = firstTried[request.requestID] {
      let elapsed = started.duration(to: .now).components
      metrics.recordLatency(Double(elapsed.seconds) * 1000 + Double(elapsed.attoseconds) / 1e15)
    }
    firstTried[request.requestID] = nil
    return
      "sent request \(request.requestID) to user \(request.toUserID) as message \(message.id)\(replayed ? " (replayed)" : "")"
  }

  /// Counts, logs and records one request's outcome (an accepted one is stored already).
  func settle(_ request: MessageRequest, _ outcome: RelayAPI.PostOutcome, retryAt: Date?) async {
    var outcome = outcome
    // Not connecting at all is retried like any failure, but counts toward the age only.
    let reachedRelay: Bool
    if case .unreachable(let reason) = outcome {
      reachedRelay = false
      outcome = .retryable(reason, retryAfter: nil)
    } else {
      reachedRelay = true
    }
    if stopping, case .retryable(let reason, _) = outcome {
      // Stopping cut the wait short (or the POST failed meanwhile): the request stays
      // SENT, due again at the next run, which sends it with the same request id.
      log("send of request \(request.requestID) stopped (\(reason)); it is sent again at the next run")
      return
    }
    do {
      switch outcome {
      case .accepted(let message, _, let replayed):
        log(countSent(request, as: message, replayed: replayed))
      case .retryable(let reason, let retryAfter):
        metrics.failedAttempts += 1
        let attempts = reachedRelay ? try await patiently { try repository.recordFailedAnswer(request.requestID) } : 0
        let age =
          Timestamp.milliseconds(from: request.createdAt).map { Date().timeIntervalSince1970 - Double($0) / 1000 } ?? 0
        if attempts >= options.maxAttempts || age >= options.maxAge {
          let limit = attempts >= options.maxAttempts ? "\(attempts) attempts" : "\(Int(age / 3_600)) h"
          try await patiently {
            try repository.markFailed(request.requestID, reason: "gave up after \(limit): \(reason)", retryAt: nil)
          }
          firstTried[request.requestID] = nil
          log(
            "request \(request.requestID) failed for good after \(limit) (\(reason)); 'chat-sync retry \(request.requestID)' sends it again"
          )
          return
        }
        let delay = retryAfter ?? options.outboxBackoff.delay(attempt: request.failCount + 1, random: options.random)
        let due = retryAt ?? Date().addingTimeInterval(delay)
        try await patiently { try repository.markFailed(request.requestID, reason: reason, retryAt: due) }
        log(
          String(
            format: "send of request \(request.requestID) failed (\(reason)); retry in %.1f s",
            max(due.timeIntervalSinceNow, 0)))
      case .rejected(let reason):
        metrics.rejected += 1
        try await patiently { try repository.markFailed(request.requestID, reason: reason, retryAt: nil) }
        firstTried[request.requestID] = nil
        log("request \(request.requestID) refused for good: \(reason)")
      case .unauthorized(let reason):
        try await patiently { try repository.markFailed(request.requestID, reason: reason, retryAt: Date()) }
        if halted == nil { halt("The relay refused the token: \(reason)") }
      case .unreachable, .outOfOrder:
        break  // made retryable above; requeued by land(_:)
      }
    } catch {
      log("outbox: \(error)")
    }
  }
}
