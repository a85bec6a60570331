import ChatStore
import TestSupport
import Testing

@testable import ChatMaintenance

@Suite(.ownThreads) struct HistoryGeneratorDeterminismTests {
  @Test func sameOptionsGiveTheSameRecords() {
    let options = HistoryGenerator.Options(owner: 1, contacts: 30, messages: 20_000, seed: 11)
    let first = GeneratedHistory(options).records
    let second = GeneratedHistory(options).records
    #expect(first.count == 20_000 + 31 + 25)
    #expect(first == second)
    #expect(first == GeneratedHistory.small.records)
  }

  @Test func anotherSeedGivesAnotherHistory() {
    let other = GeneratedHistory(contacts: 30, messages: 20_000, seed: 12)
    let base = GeneratedHistory.small
    #expect(other.records != base.records)
    let sameContent = zip(other.messages, base.messages).filter { $0.content == $1.content }.count
    #expect(sameContent < 2_000, "texts should differ, \(sameContent) of 20,000 are the same")
    #expect(other.messages.map(\.id) != base.messages.map(\.id))
  }

  /// A fixed seed pins the exact output, so a change of algorithm (or a platform whose
  /// arithmetic differs) is noticed rather than silently changing every benchmark's data.
  @Test func aSeedsHistoryIsPinned() throws {
    let history = GeneratedHistory(contacts: 12, messages: 2_000, seed: 2026, pending: 3, failed: 2)
    let first = try #require(history.messages.first)
    #expect(first.id == Self.pinnedFirstID)
    #expect(first.content == Self.pinnedFirstContent)
    #expect(history.users[1].name == Self.pinnedFirstContactName)
    #expect(fingerprint(history.records) == Self.pinnedFingerprint)
  }

  static let pinnedFirstID: Int64 = 10_367_433_235_759_104
  static let pinnedFirstContent = "year"
  static let pinnedFirstContactName = "Team 🚀"
  static let pinnedFingerprint: UInt64 = 7_788_280_232_137_070_253

  /// FNV-1a over every field of every record.
  func fingerprint(_ records: [Record]) -> UInt64 {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    func mix(_ text: String) {
      for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
      hash = (hash ^ 0xFF) &* 0x100_0000_01B3
    }
    func mix(_ number: Int64?) { mix(number.map { String($0) } ?? "nil") }
    func mix(_ text: String?) { mix(text ?? "\u{0}nil") }
    for record in records {
      switch record {
      case .user(let u):
        mix(u.id)
        mix(u.name)
        mix(u.avatarURL)
        mix(u.lastConnectedAt)
      case .message(let m):
        mix(m.id)
        mix(m.fromUserID)
        mix(m.toUserID)
        mix(m.content)
        mix(m.status.rawValue)
        mix(m.createdAt)
        mix(m.requestID)
      case .request(let r):
        mix(r.requestID)
        mix(r.toUserID)
        mix(r.content)
        mix(r.status.rawValue)
        mix(r.createdAt)
        mix(r.lastModifiedAt)
        mix(r.lastSentAt)
        mix(Int64(r.failCount))
        mix(r.nextAttemptAt)
        mix(r.failReason)
      case .edit(let id, let v):
        mix(id)
        mix(v.version)
        mix(v.content)
      }
    }
    return hash
  }
}

@Suite(.ownThreads) struct HistoryGeneratorCountTests {
  @Test(arguments: [
    // contacts, messages, pending, failed
    (1, 0, 0, 0),
    (1, 1, 0, 0),
    (1, 500, 0, 0),
    (1, 500, 20, 5),
    (5, 0, 3, 2),
    (7, 3_000, 0, 4),
    (40, 10_000, 20, 5),
  ])
  func recordCountIsWhatIsEmitted(contacts: Int, messages: Int, pending: Int, failed: Int) {
    var options = HistoryGenerator.Options(owner: 100, contacts: contacts, messages: messages, seed: 3)
    options.pending = pending
    options.failed = failed
    let generator = HistoryGenerator(options)
    let history = GeneratedHistory(options)
    #expect(generator.recordCount == Int64(history.records.count))
    #expect(history.users.count == contacts + 1)
    #expect(history.messages.count == messages)
    #expect(history.requests.count == pending + failed)
    #expect(history.requests.filter { $0.status == .pending }.count == pending)
    #expect(history.requests.filter { $0.status == .failed }.count == failed)
    // Users, then messages, then requests.
    let kinds = history.records.map { record -> Int in
      switch record {
      case .user: 0
      case .message, .edit: 1
      case .request: 2
      }
    }
    #expect(kinds == kinds.sorted())
  }

  @Test func withoutContactsThereIsOnlyTheOwner() {
    let history = GeneratedHistory(owner: 9, contacts: 0, messages: 1_000)
    #expect(history.users.map(\.id) == [9])
    #expect(history.messages.isEmpty)
    #expect(history.requests.isEmpty)
    #expect(HistoryGenerator(history.options).recordCount == 1)
  }

  @Test func negativeCountsCountAsZero() {
    var options = HistoryGenerator.Options(owner: 1, contacts: -3, messages: -10, seed: 1)
    options.pending = -1
    options.failed = -1
    let history = GeneratedHistory(options)
    #expect(history.records.count == 1)
    #expect(HistoryGenerator(options).recordCount == 1)
  }

  @Test(arguments: [
    // owner, contacts, expected ids
    (Int64(1), 3, [Int64(2), 3, 4]),
    (Int64(0), 2, [Int64(1), 2]),
    (Int64.max - 2, 5, [Int64.max - 1, Int64.max, Int64.max - 3, Int64.max - 4, Int64.max - 5]),
    (Int64.max, 2, [Int64.max - 1, Int64.max - 2]),
  ])
  func contactIDsGoAboveTheOwnerThenBelow(owner: Int64, contacts: Int, expected: [Int64]) {
    let history = GeneratedHistory(owner: owner, contacts: contacts, messages: 200)
    #expect(history.users.first?.id == owner)
    #expect(Array(history.users.dropFirst().map(\.id)) == expected)
    #expect(history.messages.allSatisfy { expected.contains($0.conversationID(owner: owner)) })
  }
}

@Suite(.ownThreads) struct HistoryGeneratorMessageTests {
  @Test func idsRiseAndMatchTheirTimes() {
    let history = GeneratedHistory.medium
    var previous = Int64.min
    var sharedMilliseconds = 0
    for message in history.messages {
      #expect(message.id > previous)
      if MessageID.milliseconds(of: message.id) == MessageID.milliseconds(of: previous) { sharedMilliseconds += 1 }
      previous = message.id
      let milliseconds = Timestamp.milliseconds(from: message.createdAt)
      #expect(milliseconds == MessageID.milliseconds(of: message.id))
      #expect(message.createdAt == Timestamp.string(milliseconds: MessageID.milliseconds(of: message.id)))
    }
    #expect(history.messages.count == 50_000)
  }

  @Test func aDenseHistorySharesMillisecondsThroughTheSequence() {
    var options = HistoryGenerator.Options(owner: 1, contacts: 3, messages: 20_000, seed: 5)
    options.days = 1
    options.pending = 0
    options.failed = 0
    let messages = GeneratedHistory(options).messages
    let ids = messages.map(\.id)
    #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 })
    #expect(messages.contains { $0.id & 0xFFFF != 0 }, "20,000 messages in a day-long span should share a millisecond")
    #expect(messages.allSatisfy { Timestamp.milliseconds(from: $0.createdAt) == MessageID.milliseconds(of: $0.id) })
  }

  @Test(arguments: [1, 30, 365, 2_000])
  func timesStayWithinTheSpan(days: Int) {
    var options = HistoryGenerator.Options(owner: 1, contacts: 10, messages: 5_000, seed: 8)
    options.days = days
    let history = GeneratedHistory(options)
    let end = options.end
    let start = max(end - Int64(days) * 86_400_000, MessageID.epochMilliseconds)
    let times = history.messages.map { MessageID.milliseconds(of: $0.id) }
    #expect(times.allSatisfy { $0 >= start && $0 <= end })
    // The history fills its span: the first message early, the last one late.
    let span = end - start
    #expect(times.first! < start + span / 10)
    #expect(times.last! > end - span / 10)
  }

  @Test func aHistoryNeverStartsBeforeTheMessageIDEpoch() {
    var options = HistoryGenerator.Options(owner: 1, contacts: 4, messages: 1_000, seed: 2)
    options.end = MessageID.epochMilliseconds + 3 * 86_400_000
    options.days = 10_000
    let history = GeneratedHistory(options)
    #expect(history.messages.count == 1_000)
    #expect(
      history.messages.allSatisfy {
        $0.id > 0 && Timestamp.milliseconds(from: $0.createdAt)! >= MessageID.epochMilliseconds
      })
  }

  @Test(arguments: [HistoryGenerator.maximumEnd, HistoryGenerator.maximumEnd + 1, 253_402_300_799_999, Int64.max])
  func anEndFarInTheFutureIsBoundedAndIdsNeverWrap(end: Int64) {
    var options = HistoryGenerator.Options(owner: 1, contacts: 4, messages: 1_000, seed: 2)
    options.end = end
    options.days = 30
    #expect(HistoryGenerator(options).end == HistoryGenerator.maximumEnd)
    let history = GeneratedHistory(options)
    #expect(history.messages.count == 1_000)
    let ids = history.messages.map(\.id)
    #expect(ids.allSatisfy { $0 > 0 })
    #expect(ids == ids.sorted())
    #expect(
      history.messages.allSatisfy { Timestamp.milliseconds(from: $0.createdAt) == MessageID.milliseconds(of: $0.id) })
    #expect(MessageID.milliseconds(of: ids.last!) <= HistoryGenerator.maximumEnd)
  }

  @Test func everyMessageIsBetweenTheOwnerAndOneContact() {
    let history = GeneratedHistory.medium
    let owner = history.options.owner
    let contacts = Set(history.users.dropFirst().map(\.id))
    for message in history.messages {
      let fromOwner = message.fromUserID == owner
      #expect(fromOwner != (message.toUserID == owner))
      #expect(contacts.contains(fromOwner ? message.toUserID : message.fromUserID))
    }
    let sent = history.messages.filter { $0.fromUserID == owner }.count
    #expect(sent > 15_000 && sent < 35_000, "owner sent \(sent) of 50,000")
  }

  @Test func aFewConversationsHoldMostMessages() {
    let history = GeneratedHistory.medium
    let counts = history.conversations().values.map(\.count).sorted(by: >)
    let top = counts.prefix(10).reduce(0, +)
    #expect(Double(top) > 0.5 * 50_000, "top 10 of 100 contacts hold \(top) of 50,000")
    // …but not all of them: the long tail still talks.
    #expect(counts.count > 50)
  }

  @Test func messagesComeInSessionsMostlyInWakingHours() {
    let times = GeneratedHistory.medium.messages.map { MessageID.milliseconds(of: $0.id) }
    let gaps = zip(times, times.dropFirst()).map { $1 - $0 }.sorted()
    let mean = Double(times.last! - times.first!) / Double(gaps.count)
    let median = Double(gaps[gaps.count / 2])
    #expect(median < mean / 4, "median gap \(median) ms, mean \(mean) ms: messages should come in bursts")
    let night = times.filter { (1...6).contains($0 / 3_600_000 % 24) }.count
    #expect(Double(night) < 0.12 * Double(times.count), "\(night) messages between 01:00 and 07:00 UTC")
  }

  @Test func lengthsHaveALongTail() {
    let lengths = GeneratedHistory.large.messages.map(\.content.count)
    #expect(lengths.count == 200_000)
    let mean = Double(lengths.reduce(0, +)) / Double(lengths.count)
    let median = lengths.sorted()[lengths.count / 2]
    #expect(mean >= 60 && mean <= 100, "mean length \(mean)")
    #expect(Double(median) < mean, "median \(median), mean \(mean)")
    #expect(lengths.filter { $0 > 2_000 }.count > 20)
    #expect(lengths.allSatisfy { $0 > 0 && $0 <= MessageText.maximumCharacters })
  }

  @Test func textsMixScriptsEmojiAndJSONHostileCharacters() {
    let texts = GeneratedHistory.small.messages.map(\.content)
    func some(_ predicate: (Unicode.Scalar) -> Bool) -> Int {
      texts.filter { $0.unicodeScalars.contains(where: predicate) }.count
    }
    #expect(some { (0x4E00...0x9FFF).contains($0.value) || (0xAC00...0xD7AF).contains($0.value) } > 100, "CJK")
    #expect(some { (0x1F300...0x1FAFF).contains($0.value) } > 100, "emoji")
    #expect(some { $0.value == 0x200D } > 10, "ZWJ sequences")
    #expect(some { (0x1F3FB...0x1F3FF).contains($0.value) } > 10, "skin tones")
    #expect(some { (0x300...0x36F).contains($0.value) } > 10, "combining marks")
    for hostile: Unicode.Scalar in ["\"", "\\", "\t", "\n"] {
      #expect(some { $0 == hostile } > 10, "\(hostile.escaped(asASCII: true))")
    }
    #expect(texts.filter { $0.utf8.allSatisfy { $0 < 0x80 } }.count > texts.count / 3, "most texts stay plain ASCII")
  }

  /// The generator counts characters with its own rule so a seed gives the same texts
  /// on any toolchain; the rule must agree with Swift for every fragment.
  @Test func fragmentCharacterCountsAgreeWithSwift() {
    for (text, fragment) in MessageText.shared.fragments {
      #expect(Int((fragment >> 40) & 0xFF) == text.count, "\(text.debugDescription)")
      #expect(MessageText.characterCount(of: text) == text.count, "\(text.debugDescription)")
    }
  }
}

@Suite(.ownThreads) struct HistoryGeneratorStatusTests {
  static let day: Int64 = 86_400_000

  /// The owner's messages of a conversation go READ…, DELIVERED…, SYNCED… in id order;
  /// those older than a day, or answered, are READ.
  @Test(arguments: [GeneratedHistory.small, GeneratedHistory.medium])
  func sentStatusesFollowAge(history: GeneratedHistory) {
    let owner = history.options.owner
    let end = history.options.end
    var notRead = 0
    for (_, messages) in history.conversations() {
      var answered = false
      for message in messages.reversed() {
        guard message.fromUserID == owner else {
          answered = true
          continue
        }
        if answered { #expect(message.status == .read, "message \(message.id) was answered but is \(message.status)") }
        if end - MessageID.milliseconds(of: message.id) > Self.day { #expect(message.status == .read) }
      }
      let statuses = messages.filter { $0.fromUserID == owner }.map(\.status)
      #expect(statuses == statuses.sorted(by: >), "statuses must not rise in id order")
      notRead += statuses.filter { $0 != .read }.count
    }
    #expect(notRead > 0, "the newest sent messages should not all be read")
  }

  @Test func sentStatusesIncludeEveryStage() {
    let statuses = Set(GeneratedHistory.large.messages.filter { $0.fromUserID == 1 }.map(\.status))
    #expect(statuses == [.read, .delivered, .synced])
  }

  /// Incoming messages are READ except the newest few of some conversations, which
  /// came after the owner last wrote there.
  @Test(arguments: [GeneratedHistory.small, GeneratedHistory.medium])
  func unreadMessagesAreTheNewestIncomingOnes(history: GeneratedHistory) {
    let owner = history.options.owner
    var unreadConversations = 0
    for (_, messages) in history.conversations() {
      let incoming = messages.filter { $0.fromUserID != owner }
      #expect(incoming.allSatisfy { $0.status != .synced })
      guard let firstUnread = messages.firstIndex(where: { $0.fromUserID != owner && $0.status != .read }) else {
        continue
      }
      unreadConversations += 1
      let after = messages[firstUnread...]
      #expect(after.allSatisfy { $0.fromUserID != owner && $0.status == .delivered })
      #expect(after.count <= ContactProfiles.maximumUnread)
    }
    #expect(unreadConversations > 0)
    #expect(unreadConversations < history.conversations().count)
  }

  @Test func requestIDsCountTheOwnersMessagesThenTheOutbox() {
    let history = GeneratedHistory.small
    let owner = history.options.owner
    let sent = history.messages.filter { $0.fromUserID == owner }
    #expect(sent.map(\.requestID) == (1...Int64(sent.count)).map { $0 })
    #expect(history.messages.filter { $0.fromUserID != owner }.allSatisfy { $0.requestID == nil })
    let requestIDs = history.requests.map(\.requestID)
    #expect(requestIDs == (Int64(sent.count) + 1...Int64(sent.count + 25)).map { $0 })
  }

  @Test func theOutboxComesAfterTheLastMessage() throws {
    let history = GeneratedHistory.small
    let last = try #require(history.messages.last).createdAt
    let end = Timestamp.string(milliseconds: history.options.end)
    let contacts = Set(history.users.dropFirst().map(\.id))
    for request in history.requests {
      #expect(request.createdAt > last && request.createdAt <= end)
      #expect(contacts.contains(request.toUserID))
      #expect(!request.content.isEmpty)
      switch request.status {
      case .pending:
        #expect(request.failCount == 0 && request.failReason == nil && request.lastSentAt == nil)
        #expect(request.nextAttemptAt == request.createdAt && request.lastModifiedAt == request.createdAt)
      case .failed:
        #expect((1...5).contains(request.failCount))
        let reason = try #require(request.failReason)
        #expect(HistoryGenerator.retryableFailures.contains(reason) == (request.nextAttemptAt != nil))
        #expect(request.lastSentAt != nil && request.lastSentAt! >= request.createdAt)
      default:
        Issue.record("unexpected status \(request.status)")
      }
    }
    let createdAt = history.requests.map(\.createdAt)
    #expect(createdAt == createdAt.sorted())
  }

  @Test func failedRequestsIncludeRetryableAndPermanentOnes() {
    let requests = GeneratedHistory(contacts: 10, messages: 100, pending: 0, failed: 60).requests
    #expect(requests.count == 60)
    #expect(requests.contains { $0.isPermanentlyFailed })
    #expect(requests.contains { !$0.isPermanentlyFailed })
    #expect(Set(requests.map(\.failCount)).count > 1)
  }
}

@Suite(.ownThreads) struct HistoryGeneratorUserTests {
  @Test func usersHaveNamesAvatarsAndLastSeenTimes() throws {
    let history = GeneratedHistory(contacts: 300, messages: 10_000)
    let users = history.users
    #expect(users.allSatisfy { !$0.name.isEmpty })
    #expect(users.contains { $0.name.unicodeScalars.contains { (0x4E00...0x9FFF).contains($0.value) } })
    #expect(users.contains { $0.name.unicodeScalars.contains { (0xC0...0x24F).contains($0.value) } })
    for user in users {
      if let url = user.avatarURL { #expect(url == "https://avatars.example.invalid/\(user.id).png") }
    }
    #expect(users.contains { $0.avatarURL == nil } && users.contains { $0.avatarURL != nil })
    #expect(users.contains { $0.lastConnectedAt == nil } && users.contains { $0.lastConnectedAt != nil })
    // A contact was online when it last wrote, and never after the end.
    let end = Timestamp.string(milliseconds: history.options.end)
    let conversations = history.conversations()
    for user in users.dropFirst() {
      guard let seen = user.lastConnectedAt else { continue }
      #expect(seen <= end)
      if let lastIncoming = conversations[user.id]?.last(where: { $0.fromUserID == user.id }) {
        #expect(lastIncoming.createdAt <= seen)
      }
    }
    let owner = try #require(users.first)
    #expect(owner.lastConnectedAt == history.messages.last?.createdAt)
  }
}
