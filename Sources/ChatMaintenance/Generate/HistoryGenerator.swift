import ChatStore

/// Makes a realistic synthetic chat history for one user, deterministically from a
/// seed: the same `Options` give the same records on any machine, any run, any day.
///
/// ```swift
/// let generator = HistoryGenerator(.init(owner: 1, contacts: 200, messages: 1_000_000, seed: 42))
/// try generator.generate { record in try writer.write(record) }
/// ```
///
/// What a history looks like:
/// - **Users.** The owner, then the contacts. Contact ids are `owner + 1`, `owner + 2`, …
///   while they fit in an `Int64`; the rest continue below the owner (`owner - 1`,
///   `owner - 2`, …), so there are always exactly `contacts` of them. Names mix Latin
///   with diacritics, CJK, Cyrillic, Greek and more; about 1 in 5 has no avatar and
///   1 in 7 hides its last-seen time (`lastConnectedAt` nil).
/// - **Messages**, in ascending id order (`MessageID` of `createdAt`, with the
///   sequence for messages of the same millisecond), all between the owner and one
///   contact, in `[end - days, end]`. A few conversations hold most of them (Zipf, see
///   `ContactPopularity`); they come in sessions of back-and-forth, more in waking hours
///   (UTC). The owner's messages carry `requestID` 1, 2, 3, … in id order.
/// - **Outbox**: `pending` PENDING and `failed` FAILED requests, to popular contacts,
///   created after the last message and no later than `end`, with request ids going on
///   from the messages' ones.
///
/// Statuses follow what the clients would have seen by `end`:
/// - An owner's message is READ when the contact replied after it, or when it is older
///   than the contact's read lag (at most a day); otherwise DELIVERED when it is older
///   than the contact's last connection (`lastConnectedAt`, at most a day before `end`
///   and never before the contact's last message), otherwise SYNCED. So in every
///   conversation the owner's messages go READ…, DELIVERED…, SYNCED… in id order, and
///   every one older than a day is READ.
/// - An incoming message is READ, except in about a third of the conversations the
///   newest 1 to 8 incoming messages that came after the owner's last message there:
///   those are DELIVERED (unread). So in every conversation the unread messages are
///   the newest incoming ones and the owner has not written since the first of them.
///
/// **Media** (`mediaRate`, ``GeneratedMedia``): a share of the messages carry one, in
/// `Message.attachments` (its thumbnail and SHA-256 made here); `write(into:pipelined:progress:)`
/// writes their files and rows. An edit or tombstone record carries none.
///
/// Memory: O(`contacts`), whatever `messages` is (with media, at most a few thousand
/// messages wait for their media's hashes: `HeldMessages`). `generate` runs the timeline
/// twice (the first run, without texts, learns each conversation's newest messages).
///
/// Degenerate options are settled, not refused: negative counts count as 0; with no
/// contacts there are no messages and no requests; `days` is at least 1; the history
/// never starts before 2020-01-01 (the `MessageID` epoch), `end` is at least a day
/// after it (`minimumEnd`) and at most the last time a `MessageID` can hold (`maximumEnd`).
public struct HistoryGenerator: Sendable {
  /// What to generate.
  public struct Options: Sendable, Hashable {
    /// The file's user id.
    public var owner: Int64
    /// How many contacts (see `HistoryGenerator` for their ids).
    public var contacts: Int
    /// How many acknowledged messages.
    public var messages: Int
    /// The seed: the same options give the same history.
    public var seed: UInt64
    /// The history spans this many days, ending at `end`.
    public var days: Int = 365
    /// When the history ends, in milliseconds since 1970. A fixed default
    /// (2026-01-01T00:00:00Z), so the same arguments give the same content on any day.
    public var end: Int64 = HistoryGenerator.defaultEnd
    /// PENDING outbox requests at the end.
    public var pending: Int = 20
    /// FAILED outbox requests at the end.
    public var failed: Int = 5
    /// The share of messages edited once by their sender (0 to 1): the message is
    /// emitted as sent, then again as version 1 with a new text, a few minutes later.
    public var editRate: Double = 0
    /// The share of messages deleted for everyone (0 to 1, with `editRate` at most 1):
    /// emitted as sent, then again as a tombstone.
    public var deleteRate: Double = 0
    /// The share of messages that carry a media (0 to 1; ``GeneratedMedia``): an image,
    /// a video, an audio or a file, named by the SHA-256 of its bytes. A message deleted
    /// for everyone carries none.
    public var mediaRate: Double = 0

    public init(owner: Int64, contacts: Int, messages: Int, seed: UInt64) {
      self.owner = owner
      self.contacts = contacts
      self.messages = messages
      self.seed = seed
    }
  }

  /// 2026-01-01T00:00:00Z in milliseconds since 1970.
  public static let defaultEnd: Int64 = 1_767_225_600_000

  /// The latest `end` a history can have, in milliseconds since 1970: the last
  /// millisecond a `MessageID` holds (in the year 6479). A later `end` is settled to
  /// it; a command line should refuse it instead (`--end` must not be after this).
  public static let maximumEnd: Int64 = MessageID.maximumMilliseconds

  /// The earliest `end`: a day after the `MessageID` epoch (2020-01-02). An earlier
  /// `end` is settled to it.
  public static let minimumEnd: Int64 = MessageID.epochMilliseconds + HistoryTimeline.day

  /// The options as given.
  public let options: Options

  // Settled options (see the type's documentation).
  let contactCount: Int
  let messageCount: Int
  let pendingCount: Int
  let failedCount: Int
  let end: Int64
  let start: Int64
  /// The last instant a message may have; the time after it is left to the outbox.
  let lastMessageTime: Int64
  let popularity: ContactPopularity

  /// A generator for `options`. Cheap: the work happens in `generate`.
  public init(_ options: Options) {
    self.options = options
    let contacts = max(0, options.contacts)
    contactCount = contacts
    messageCount = contacts > 0 ? max(0, options.messages) : 0
    pendingCount = contacts > 0 ? max(0, options.pending) : 0
    failedCount = contacts > 0 ? max(0, options.failed) : 0
    let day = HistoryTimeline.day
    // Ids are made from times up to `end`: past `maximumEnd` they would wrap.
    let end = min(max(options.end, Self.minimumEnd), Self.maximumEnd)
    let days = max(1, options.days)
    let maxDays = (end - MessageID.epochMilliseconds) / day
    self.end = end
    start = Int64(days) > maxDays ? MessageID.epochMilliseconds : end - Int64(days) * day
    let requests = Int64(pendingCount + failedCount)
    lastMessageTime = end - (requests > 0 ? max(1, min((end - start) / 100, requests * 30_000)) : 0)
    popularity = ContactPopularity(contacts: contacts, seed: options.seed)
  }

  /// How many records `generate` will emit (users + messages + requests), for progress bars.
  public var recordCount: Int64 {
    Int64(1 + contactCount) + Int64(messageCount) + Int64(pendingCount + failedCount)
      + Int64((Double(messageCount) * (options.editRate + options.deleteRate)).rounded())
  }

  /// The id of the contact at `index` (0-based): above the owner while ids fit, then below.
  func contactID(at index: Int) -> Int64 {
    let owner = options.owner
    let above = owner >= 0 ? Int64.max - owner : Int64.max
    return Int64(index) < above ? owner + 1 + Int64(index) : owner - 1 - (Int64(index) - above)
  }

  /// Emits the owner and the contacts (`.user`), then every message in ascending id
  /// order (`.message`), then the outbox requests (`.request`). Streams: memory does
  /// not grow with `messages`.
  public func generate(_ emit: (Record) throws -> Void) rethrows {
    // First run: what each conversation's messages cannot know when they are made.
    var tally = ConversationTally(contacts: contactCount)
    var probe = makeTimeline()
    while let slot = probe.next() { tally.count(slot) }

    let profiles = ContactProfiles(self, tally: tally)
    for user in profiles.users(self, tally: tally) { try emit(.user(user)) }

    // Second run: the messages.
    let text = MessageText.shared
    var textRandom = HistoryRandom(seed: options.seed, stream: .text)
    let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: text.maximumBytes)
    defer { scratch.deallocate() }
    var timestamps = TimestampText()
    var incomingSeen = [Int](repeating: 0, count: contactCount)
    var requestID: Int64 = 0
    var timeline = makeTimeline()
    let owner = options.owner
    // Edits, deletes and media draw from streams of their own: without them, a seed
    // gives the history it always gave.
    let changing = options.editRate > 0 || options.deleteRate > 0
    var changes = HistoryRandom(seed: options.seed, stream: .changes)
    var changeText = HistoryRandom(seed: options.seed ^ 0x5EED_ED17, stream: .text)
    let mediaRate = options.mediaRate
    var mediaRandom = HistoryRandom(seed: options.seed, stream: .media)
    var held = HeldMessages()
    while let slot = timeline.next() {
      let id = MessageID.make(milliseconds: slot.milliseconds, sequence: slot.sequence)
      let content = text.compose(&textRandom, scratch: scratch)
      let createdAt = timestamps.string(slot.milliseconds)
      let contact = profiles.ids[slot.contact]
      let message: Message
      if slot.outgoing {
        requestID += 1
        message = Message(
          id: id, fromUserID: owner, toUserID: contact, content: content,
          status: profiles.statusOfSent(id: id, at: slot.milliseconds, contact: slot.contact),
          createdAt: createdAt, requestID: requestID)
      } else {
        let index = incomingSeen[slot.contact]
        incomingSeen[slot.contact] = index + 1
        message = Message(
          id: id, fromUserID: contact, toUserID: owner, content: content,
          status: index >= profiles.firstUnread[slot.contact] ? .delivered : .read, createdAt: createdAt)
      }
      var change: Message?
      if changing {
        let draw = changes.unit()
        if draw < options.deleteRate + options.editRate {
          var changed = message
          let at = timestamps.string(slot.milliseconds + changes.within(1_000...600_000))
          if draw < options.deleteRate {
            changed.content = ""
            changed.deletedAt = at
          } else {
            changed.content = text.compose(&changeText, scratch: scratch)
            changed.version = 1
            changed.editedAt = at
          }
          change = changed
        }
      }
      // A media is drawn for a message deleted for everyone too (so the others' do not
      // depend on --delete-rate), then dropped with the rest of its content.
      var media: GeneratedMedia?
      if mediaRate > 0 && mediaRandom.unit() < mediaRate {
        media = GeneratedMedia(&mediaRandom, seed: options.seed, messageID: id)
        if change?.deletedAt != nil { media = nil }
      }
      if media == nil && held.isEmpty {
        try emit(.message(message))
        if let change { try emit(.message(change)) }
      } else {
        held.hold(message, change: change, media: media)
        if held.isFull { try held.release(emit) }
      }
    }
    try held.release(emit)

    try generateOutbox(after: tally.lastMilliseconds ?? start, firstRequestID: requestID + 1, ids: profiles.ids, emit)
  }

  private func makeTimeline() -> HistoryTimeline {
    HistoryTimeline(
      seed: options.seed, messages: messageCount, start: start, last: lastMessageTime, popularity: popularity)
  }

  // MARK: - Outbox

  /// Reasons a send fails that the outbox retries, and ones it gives up on.
  static let retryableFailures = ["HTTP 503", "HTTP 502", "HTTP 500", "HTTP 429", "timed out", "connection reset"]
  static let permanentFailures = ["HTTP 400", "HTTP 403", "HTTP 413"]

  private func generateOutbox(after base: Int64, firstRequestID: Int64, ids: [Int64], _ emit: (Record) throws -> Void)
    rethrows
  {
    let total = pendingCount + failedCount
    guard total > 0 else { return }
    var random = HistoryRandom(seed: options.seed, stream: .outbox)
    var timestamps = TimestampText()
    let text = MessageText.shared
    let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: text.maximumBytes)
    defer { scratch.deallocate() }
    let step = max(1, 2 * (end - base) / Int64(total + 1))
    var time = base
    var failedLeft = failedCount
    for offset in 0..<total {
      time = min(end, time + random.within(1...step))
      let contact = ids[popularity.pick(&random)]
      let content = text.compose(&random, scratch: scratch)
      let createdAt = timestamps.string(time)
      let failed = random.below(total - offset) < failedLeft
      var request = MessageRequest(
        requestID: firstRequestID + Int64(offset), toUserID: contact, content: content, status: .pending,
        createdAt: createdAt, lastModifiedAt: createdAt, failCount: 0, nextAttemptAt: createdAt)
      if failed {
        failedLeft -= 1
        let attemptedAt = min(end, time + random.within(200...5_000))
        let attempted = Timestamp.string(milliseconds: attemptedAt)
        request.status = .failed
        request.failCount = 1 + random.below(5)
        request.lastSentAt = attempted
        request.lastModifiedAt = attempted
        if random.below(10) < 7 {
          request.failReason = Self.retryableFailures[random.below(Self.retryableFailures.count)]
          request.nextAttemptAt = Timestamp.string(milliseconds: attemptedAt + 1_000 << Int64(request.failCount))
        } else {
          request.failReason = Self.permanentFailures[random.below(Self.permanentFailures.count)]
          request.nextAttemptAt = nil
        }
      }
      try emit(.request(request))
    }
  }
}

// MARK: - What the first run learns

/// Per conversation: its incoming messages, the ones since the owner last wrote, and
/// the last incoming message.
struct ConversationTally {
  var incoming: [Int]
  /// Incoming messages after the owner's last message in the conversation.
  var trailingIncoming: [Int]
  /// The id of the newest incoming message, or `Int64.min`.
  var lastIncomingID: [Int64]
  var lastIncomingTime: [Int64]
  /// The newest message's time, nil without messages.
  var lastMilliseconds: Int64?

  init(contacts: Int) {
    incoming = Array(repeating: 0, count: contacts)
    trailingIncoming = incoming
    lastIncomingID = Array(repeating: .min, count: contacts)
    lastIncomingTime = lastIncomingID
  }

  @inline(__always)
  mutating func count(_ slot: HistoryTimeline.Slot) {
    lastMilliseconds = slot.milliseconds
    if slot.outgoing {
      trailingIncoming[slot.contact] = 0
    } else {
      incoming[slot.contact] += 1
      trailingIncoming[slot.contact] += 1
      lastIncomingID[slot.contact] = MessageID.make(milliseconds: slot.milliseconds, sequence: slot.sequence)
      lastIncomingTime[slot.contact] = slot.milliseconds
    }
  }
}
