import ChatProtocol
import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatRelay

/// Runs `body` with a new, empty folder that is removed afterwards.
func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
  let url = FileManager.default.temporaryDirectory
    .appendingPathComponent("chatrelay-tests-\(UUID().uuidString)", isDirectory: true)
  try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: url) }
  return try body(url.path)
}

/// A relay file with users 1 (Ada), 2 (Grace) and 3 (Linus); `body` gets the store,
/// its path and the users' tokens.
func withRelay<T>(_ body: (RelayStore, String, [Int64: String]) throws -> T) throws -> T {
  try withTemporaryDirectory { dir in
    let path = dir + "/relay.db"
    let store = try RelayStore(path: path)
    var tokens: [Int64: String] = [:]
    for (id, name) in [(Int64(1), "Ada"), (2, "Grace"), (3, "Linus")] {
      tokens[id] = try store.addUser(id: id, name: name, avatarURL: id == 1 ? "https://example.com/ada.png" : nil)
    }
    return try body(store, path, tokens)
  }
}

extension RelayStore {
  /// The ids of the messages to `user` that no device of theirs stored yet, in order.
  func waiting(for user: Int64) throws -> [Int64] {
    try log(for: user, after: 0, limit: RelayStore.maximumPageSize).messages
      .filter { $0.toUserId == user && $0.status == RelayMessage.syncedStatus }.map(\.messageId)
  }
}

/// 2026-01-01T00:00:00Z in milliseconds since 1970.
let baseTime: Int64 = 1_767_225_600_000
let createdAt = "2026-01-01T00:00:00.000Z"

/// Where `needle` first occurs in `haystack`, if anywhere.
func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
  guard !needle.isEmpty, haystack.count >= needle.count else { return false }
  for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
    if haystack[start..<(start + needle.count)].elementsEqual(needle) { return true }
  }
  return false
}

func storeErrorKind(_ body: () throws -> Void) -> StoreError.Kind? {
  do {
    try body()
    return nil
  } catch let error as StoreError {
    return error.kind
  } catch {
    return .internalError
  }
}

@Suite(.ownThreads) struct RelayStoreTests {
  // MARK: - File and schema

  @Test func newFileIsMarkedAndVersioned() throws {
    try withRelay { store, path, _ in
      #expect(try store.schemaVersion() == RelaySchema.latestVersion)
      let db = try Database(path: path, mode: .readOnly)
      #expect(try db.int64("PRAGMA application_id") == Int64(RelaySchema.applicationID))
      let recorded = try db.query("SELECT version, name, checksum FROM chatdb_migrations ORDER BY version") {
        "\($0.int(0)) \($0.string(1)) \($0.string(2))"
      }
      #expect(recorded == RelaySchema.migrations.map { "\($0.version) \($0.name) \($0.checksum)" })
      #expect(try db.string("PRAGMA journal_mode") == "wal")
    }
  }

  @Test func reopeningKeepsStateAndDoesNotMigrateAgain() throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/relay.db"
      let token = try RelayStore(path: path).addUser(id: 9, name: "Nine", avatarURL: nil)
      let store = try RelayStore(path: path)
      #expect(try store.authenticate(token: token)?.user == 9)
      #expect(try store.schemaVersion() == RelaySchema.latestVersion)
    }
  }

  @Test func refusesAChatFileAndItsName() throws {
    try withTemporaryDirectory { dir in
      #expect(storeErrorKind { _ = try RelayStore(path: dir + "/chats-5.db") } == .badInput)
      #expect(!FileManager.default.fileExists(atPath: dir + "/chats-5.db"))
      // A chat database under another name: tables, but not the relay's application_id.
      let chat = dir + "/copy.db"
      _ = try Migrator().migrate(fileAt: chat, owner: 5, backup: false)
      #expect(storeErrorKind { _ = try RelayStore(path: chat) } == .schemaMismatch)
      // And chatdb's migrator refuses the relay's file (its migrations are not chatdb's).
      let relay = dir + "/relay.db"
      _ = try RelayStore(path: relay)
      let status = try Migrator().status(ofFileAt: relay)
      #expect(!status.drift.isEmpty)
      #expect(throws: StoreError.self) { _ = try Migrator().migrate(fileAt: relay, backup: false) }
    }
  }

  // MARK: - Users and tokens

  @Test func tokenIsNotInTheFile() throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/relay.db"
      var tokens: [String] = []
      do {
        let store = try RelayStore(path: path)
        tokens.append(try store.addUser(id: 1, name: "Ada", avatarURL: nil))
        tokens.append(try store.addUser(id: 2, name: "Grace", avatarURL: nil))
        tokens.append(try store.rotateToken(id: 2))
        // Still open: the WAL holds the latest pages; check it too.
        for suffix in ["", "-wal"] {
          let bytes = [UInt8](FileManager.default.contents(atPath: path + suffix) ?? Data())
          for token in tokens { #expect(!contains(bytes, Array(token.utf8)), "token found in relay.db\(suffix)") }
        }
      }
      let bytes = [UInt8](FileManager.default.contents(atPath: path) ?? Data())
      #expect(bytes.count > 0)
      for token in tokens {
        #expect(token.utf8.count == 43)
        #expect(token.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        #expect(!contains(bytes, Array(token.utf8)))
      }
      // What is in the file is the digest.
      let db = try Database(path: path, mode: .readOnly)
      let digest = try db.query("SELECT digest FROM RelayDevices WHERE user_id = 1") { $0.value(0) }.first
      #expect(digest == .blob(AccessToken.digest(tokens[0])))
    }
  }

  @Test func authenticateRightWrongRotatedRemoved() throws {
    try withRelay { store, _, tokens in
      #expect(try store.authenticate(token: tokens[1]!)?.user == 1)
      #expect(try store.authenticate(token: tokens[2]!)?.user == 2)
      #expect(tokens[1] != tokens[2])
      #expect(try store.authenticate(token: "")?.user == nil)
      #expect(try store.authenticate(token: tokens[1]! + "x")?.user == nil)
      #expect(try store.authenticate(token: String(tokens[1]!.dropLast()) + "A")?.user == nil || tokens[1]!.last == "A")
      #expect(try store.authenticate(token: String(repeating: "a", count: 10_000))?.user == nil)

      let rotated = try store.rotateToken(id: 1)
      #expect(rotated != tokens[1])
      #expect(try store.authenticate(token: tokens[1]!)?.user == nil)
      #expect(try store.authenticate(token: rotated)?.user == 1)

      try store.removeUser(id: 2)
      #expect(try store.authenticate(token: tokens[2]!)?.user == nil)
      #expect(try store.user(id: 2) == nil)
    }
  }

  @Test func usersAndLastConnected() throws {
    try withRelay { store, _, _ in
      #expect(try store.users().map(\.id) == [1, 2, 3])
      #expect(
        try store.user(id: 1)
          == RelayUser(id: 1, name: "Ada", avatarURL: "https://example.com/ada.png", lastConnectedAt: nil))
      try store.setLastConnected(id: 3, at: "2026-01-02T03:04:05.678Z")
      #expect(try store.user(id: 3)?.lastConnectedAt == "2026-01-02T03:04:05.678Z")
      #expect(try store.user(id: 99) == nil)
    }
  }

  // MARK: - Posting

  @Test func postIsIdempotentAlsoAfterDelivery() throws {
    try withRelay { store, _, _ in
      let first = try store.post(from: 1, requestID: 7, to: 2, content: "hello", createdAt: createdAt, now: baseTime)
      #expect(first.isNew)
      #expect(
        first.message
          == RelayMessage(
            messageId: MessageID.make(milliseconds: baseTime), fromUserId: 1, toUserId: 2, content: "hello",
            createdAt: createdAt, fromDeviceId: 1, requestId: 7))
      #expect(first.message.status == "SYNCED")

      let retry = try store.post(
        from: 1, requestID: 7, to: 2, content: "hello", createdAt: createdAt, now: baseTime + 5_000)
      #expect(!retry.isNew)
      #expect(retry.message == first.message)
      #expect(try store.waiting(for: 2) == [first.message.messageId])

      // The same request id from another sender is another message.
      let other = try store.post(from: 3, requestID: 7, to: 2, content: "hello", createdAt: createdAt, now: baseTime)
      #expect(other.isNew && other.message.messageId > first.message.messageId)

      try store.acknowledgeDelivery(by: 2, ids: [first.message.messageId, other.message.messageId])
      #expect(try store.waiting(for: 2).isEmpty)
      let afterDelivery = try store.post(
        from: 1, requestID: 7, to: 2, content: "hello", createdAt: createdAt, now: baseTime + 9_000)
      #expect(!afterDelivery.isNew)
      #expect(afterDelivery.message == first.message)
      #expect(try store.waiting(for: 2).isEmpty)
      // Delivered, the message stays in both logs (for the retention window).
      #expect(try store.log(for: 2, after: 0, limit: 10).messages.map(\.status) == ["DELIVERED", "DELIVERED"])

      // A reused key for a different message is refused, not silently answered.
      #expect(throws: RequestIDConflict.self) {
        _ = try store.post(from: 1, requestID: 7, to: 2, content: "other", createdAt: createdAt, now: baseTime)
      }
      #expect(throws: RequestIDConflict.self) {
        _ = try store.post(from: 1, requestID: 7, to: 3, content: "hello", createdAt: createdAt, now: baseTime)
      }
    }
  }

  @Test func idsIncreaseAcrossReopenAndWhenTheClockStepsBack() throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/relay.db"
      var ids: [Int64] = []
      do {
        let store = try RelayStore(path: path)
        try store.addUser(id: 1, name: "Ada", avatarURL: nil)
        try store.addUser(id: 2, name: "Grace", avatarURL: nil)
        ids.append(
          try store.post(from: 1, requestID: 1, to: 2, content: "a", createdAt: createdAt, now: baseTime).message
            .messageId)
        // Same millisecond: next id.
        ids.append(
          try store.post(from: 1, requestID: 2, to: 2, content: "b", createdAt: createdAt, now: baseTime).message
            .messageId)
        // The clock steps back an hour.
        ids.append(
          try store.post(from: 2, requestID: 1, to: 1, content: "c", createdAt: createdAt, now: baseTime - 3_600_000)
            .message.messageId)
        try store.acknowledgeDelivery(by: 2, ids: ids)
        try store.acknowledgeDelivery(by: 1, ids: ids)
      }
      // A restart with a clock still behind goes on from the last id.
      let store = try RelayStore(path: path)
      #expect(try store.lastIssuedMessageID() == ids.last)
      ids.append(
        try store.post(from: 1, requestID: 3, to: 2, content: "d", createdAt: createdAt, now: baseTime - 1).message
          .messageId)
      // A clock before 2020 is clamped, not a crash.
      ids.append(
        try store.post(from: 1, requestID: 4, to: 2, content: "e", createdAt: createdAt, now: 0).message.messageId)
      // A clock that moves on gives time-based ids again.
      ids.append(
        try store.post(from: 1, requestID: 5, to: 2, content: "f", createdAt: createdAt, now: baseTime + 60_000).message
          .messageId)
      #expect(ids == ids.sorted() && Set(ids).count == ids.count)
      #expect(ids[0] == MessageID.make(milliseconds: baseTime))
      #expect(ids[1] == ids[0] + 1 && ids[2] == ids[1] + 1 && ids[3] == ids[2] + 1)
      #expect(ids.last == MessageID.make(milliseconds: baseTime + 60_000))
    }
  }

  @Test func theLogPagesWithHasMore() throws {
    try withRelay { store, _, _ in
      var sent: [RelayMessage] = []
      for i in 1...5 {
        sent.append(
          try store.post(
            from: 1, requestID: Int64(i), to: 2, content: "m\(i)", createdAt: createdAt, now: baseTime + Int64(i)
          ).message)
      }
      // User 2's own message is in their log too; user 3's is not.
      let own = try store.post(from: 2, requestID: 1, to: 1, content: "from 2", createdAt: createdAt, now: baseTime + 9)
      _ = try store.post(from: 3, requestID: 1, to: 1, content: "not for 2", createdAt: createdAt, now: baseTime + 10)
      let ids = sent.map(\.messageId) + [own.message.messageId]
      let page1 = try store.log(for: 2, after: 0, limit: 2)
      #expect(page1.messages.map(\.messageId) == Array(ids[0..<2]) && page1.hasMore && page1.next == ids[1])
      let page2 = try store.log(for: 2, after: page1.next, limit: 2)
      #expect(page2.messages.map(\.messageId) == Array(ids[2..<4]) && page2.hasMore)
      let page3 = try store.log(for: 2, after: page2.next, limit: 2)
      #expect(page3.messages.map(\.messageId) == Array(ids[4..<6]) && !page3.hasMore && page3.next == ids[5])
      // The recipient sees no request id; the sender's devices see theirs.
      #expect(page1.messages.allSatisfy { $0.requestId == nil && $0.fromDeviceId == nil })
      #expect(page3.messages.last?.requestId == 1 && page3.messages.last?.fromDeviceId == 2)
      let exact = try store.log(for: 2, after: 0, limit: 6)
      #expect(exact.messages.map(\.messageId) == ids && !exact.hasMore)
      let end = try store.log(for: 2, after: ids[5], limit: 2)
      #expect(end.messages.isEmpty && !end.hasMore && end.next == ids[5])
    }
  }

  // MARK: - Receipts

  @Test func acknowledgementDeliversAndCreatesOneUpdatePerMessageOnce() throws {
    try withRelay { store, _, _ in
      let a = try store.post(from: 1, requestID: 1, to: 2, content: "a", createdAt: createdAt, now: baseTime).message
      let b = try store.post(from: 3, requestID: 1, to: 2, content: "b", createdAt: createdAt, now: baseTime).message
      let toAda = try store.post(from: 2, requestID: 1, to: 1, content: "c", createdAt: createdAt, now: baseTime)
        .message

      // 2 cannot acknowledge a message addressed to 1: ignored.
      let updates = try store.acknowledgeDelivery(
        by: 2, ids: [b.messageId, a.messageId, toAda.messageId, a.messageId, 424242], now: baseTime + 10)
      #expect(updates.map(\.messageId) == [a.messageId, b.messageId])
      #expect(updates.map(\.userId) == [1, 3])
      #expect(
        updates.allSatisfy {
          $0.type == .messageDelivered && $0.conversationId == 2
            && $0.at == Timestamp.string(milliseconds: baseTime + 10)
        })
      #expect(updates[1].sequence > updates[0].sequence)
      #expect(try store.waiting(for: 2).isEmpty)
      #expect(try store.waiting(for: 1) == [toAda.messageId])

      #expect(try store.acknowledgeDelivery(by: 2, ids: [a.messageId, b.messageId]).isEmpty)
      #expect(try store.statusUpdates(for: 1, after: 0) == [updates[0]])
      #expect(try store.statusUpdates(for: 3, after: 0) == [updates[1]])
      #expect(try store.statusUpdates(for: 2, after: 0).isEmpty)
    }
  }

  @Test func readReceiptsGoForwardOnly() throws {
    try withRelay { store, _, _ in
      let m1 = try store.post(from: 1, requestID: 1, to: 2, content: "a", createdAt: createdAt, now: baseTime).message
      let m2 = try store.post(from: 1, requestID: 2, to: 2, content: "b", createdAt: createdAt, now: baseTime + 1)
        .message
      try store.acknowledgeDelivery(by: 2, ids: [m1.messageId, m2.messageId])
      let updates = try store.markRead(by: 2, conversation: 1, upTo: m2.messageId, now: baseTime + 5)
      let read = try #require(updates.first)
      #expect(
        read.type == .messageRead && read.userId == 1 && read.conversationId == 2 && read.messageId == m2.messageId)
      // The reader's own devices learn it too.
      #expect(
        updates.dropFirst().map(\.update)
          == [
            StatusUpdate(
              sequence: read.sequence + 1, type: .conversationRead, messageId: m2.messageId, conversationId: 1,
              at: read.at)
          ] && updates.last?.userId == 2)
      #expect(try store.markRead(by: 2, conversation: 1, upTo: m2.messageId).isEmpty)
      #expect(try store.markRead(by: 2, conversation: 1, upTo: m1.messageId).isEmpty)
      #expect(try store.statusUpdates(for: 1, after: 0).filter { $0.type == .messageRead } == [read])
      let m3 = try store.post(from: 1, requestID: 3, to: 2, content: "c", createdAt: createdAt, now: baseTime + 2)
        .message
      try store.acknowledgeDelivery(by: 2, ids: [m3.messageId])
      let later = try #require(try store.markRead(by: 2, conversation: 1, upTo: m3.messageId).first)
      #expect(later.sequence > read.sequence)
      // Refused: an id never issued, a stranger, oneself, an unknown user.
      #expect(storeErrorKind { try store.markRead(by: 2, conversation: 1, upTo: m3.messageId + 1) } == .badInput)
      #expect(storeErrorKind { try store.markRead(by: 3, conversation: 1, upTo: m1.messageId) } == .badInput)
      #expect(storeErrorKind { try store.markRead(by: 2, conversation: 2, upTo: m1.messageId) } == .badInput)
      #expect(storeErrorKind { try store.markRead(by: 2, conversation: 99, upTo: m1.messageId) } == .notFound)
    }
  }

  /// Issue 25: a read receipt stood in for delivery, so a message the reader never had
  /// was deleted and shown READ to its sender. The mark now stops below it.
  @Test func aReadMarkStopsBelowAMessageTheReaderHasNotAcknowledged() throws {
    try withRelay { store, _, _ in
      let m1 = try store.post(from: 1, requestID: 1, to: 2, content: "missed", createdAt: createdAt, now: baseTime)
        .message
      let m2 = try store.post(from: 1, requestID: 2, to: 2, content: "seen", createdAt: createdAt, now: baseTime + 1)
        .message
      try store.acknowledgeDelivery(by: 2, ids: [m2.messageId])
      let read = try #require(try store.markRead(by: 2, conversation: 1, upTo: m2.messageId).first)
      #expect(read.messageId == m1.messageId - 1, "read up to just below the undelivered message")
      #expect(try store.readMark(by: 2, conversation: 1) == m1.messageId - 1)
      #expect(try store.waiting(for: 2) == [m1.messageId], "still waiting")
      #expect(
        try store.markRead(by: 2, conversation: 1, upTo: m2.messageId).isEmpty, "nothing more until it is acknowledged")
      try store.acknowledgeDelivery(by: 2, ids: [m1.messageId])
      #expect(try store.markRead(by: 2, conversation: 1, upTo: m2.messageId).first?.messageId == m2.messageId)
    }
  }

  @Test func statusUpdatesFollowTheCursor() throws {
    try withRelay { store, _, _ in
      var ids: [Int64] = []
      for i in 1...3 {
        ids.append(
          try store.post(
            from: 1, requestID: Int64(i), to: 2, content: "m", createdAt: createdAt, now: baseTime + Int64(i)
          ).message.messageId)
      }
      let delivered = try store.acknowledgeDelivery(by: 2, ids: ids)
      #expect(delivered.count == 3)
      let all = try store.statusUpdates(for: 1, after: 0)
      #expect(all == delivered)
      #expect(try store.statusUpdates(for: 1, after: all[0].sequence) == Array(all[1...]))
      // User 1's only device stored two: they are dropped.
      try store.acknowledgeSync(user: 1, device: 1, messages: 0, updates: all[1].sequence, retention: .days(30))
      #expect(try store.statusUpdates(for: 1, after: 0) == [all[2]])
      // Sequences never go back, even after the newest is dropped.
      try store.acknowledgeSync(user: 1, device: 1, messages: 0, updates: all[2].sequence, retention: .days(30))
      #expect(try store.statusUpdates(for: 1, after: 0).isEmpty)
      let next = try #require(try store.markRead(by: 2, conversation: 1, upTo: ids[2]).first)
      #expect(next.sequence > all[2].sequence)
    }
  }

  // MARK: - Contacts

  @Test func contactsDecideVisibility() throws {
    try withRelay { store, _, _ in
      #expect(try store.contacts(of: 1).isEmpty)
      #expect(try store.canSee(viewer: 1, user: 1))
      #expect(try !store.canSee(viewer: 1, user: 2))
      _ = try store.post(from: 1, requestID: 1, to: 2, content: "hi", createdAt: createdAt, now: baseTime)
      #expect(try store.contacts(of: 1) == [2])
      #expect(try store.contacts(of: 2) == [1])
      #expect(try store.canSee(viewer: 2, user: 1) && store.canSee(viewer: 1, user: 2))
      #expect(try !store.canSee(viewer: 3, user: 1) && !store.canSee(viewer: 1, user: 3))
      _ = try store.post(from: 3, requestID: 1, to: 1, content: "yo", createdAt: createdAt, now: baseTime)
      #expect(try store.contacts(of: 1) == [2, 3])
    }
  }

  @Test func removingAUserKeepsWhatTheySentAndTheirIdempotencyRecords() throws {
    try withRelay { store, _, _ in
      let fromAda = try store.post(
        from: 1, requestID: 1, to: 2, content: "to grace", createdAt: createdAt, now: baseTime
      ).message
      _ = try store.post(from: 2, requestID: 1, to: 1, content: "to ada", createdAt: createdAt, now: baseTime).message
      try store.removeUser(id: 1)
      #expect(try store.waiting(for: 2) == [fromAda.messageId])
      #expect(try store.waiting(for: 1).isEmpty)
      #expect(try store.contacts(of: 2).isEmpty)
      #expect(try !store.canSee(viewer: 2, user: 1))
      #expect(storeErrorKind { try store.removeUser(id: 1) } == .notFound)
      // The record stays under the removed device: a re-added id gets new devices (ids are
      // never reused), whose request 1 is theirs, while a retry from the old device would
      // still get the old message.
      try store.addUser(id: 1, name: "Ada again", avatarURL: nil)
      #expect(try store.device(id: 1) == nil)
      #expect(try store.devices(of: 1).map(\.id) == [4])
      let retry = try store.post(
        from: 1, device: 1, requestID: 1, to: 2, content: "to grace", createdAt: createdAt, now: baseTime)
      #expect(!retry.isNew && retry.message == fromAda)
      let fresh = try store.post(from: 1, requestID: 1, to: 2, content: "to grace", createdAt: createdAt, now: baseTime)
      #expect(fresh.isNew && fresh.message.messageId != fromAda.messageId)
    }
  }

  // MARK: - Pushes

  @Test func pushRecordsInOrder() throws {
    try withRelay { store, _, _ in
      let a = try store.recordPush(to: 2, messageId: 10, at: createdAt)
      let b = try store.recordPush(to: 3, messageId: 11, at: createdAt)
      #expect(try store.pushes(limit: 10) == [a, b])
      #expect(try store.pushes(limit: 1) == [a])
      #expect(try store.pushes(after: a.id, limit: 10) == [b])
    }
  }

  // MARK: - Bad input

  struct BadCall: Sendable, CustomStringConvertible {
    var description: String
    var kind: StoreError.Kind
    var call: @Sendable (RelayStore) throws -> Void
  }

  static let badCalls: [BadCall] = [
    BadCall(description: "duplicate user", kind: .badInput) { try $0.addUser(id: 1, name: "Again", avatarURL: nil) },
    BadCall(description: "user id 0", kind: .badInput) { try $0.addUser(id: 0, name: "Zero", avatarURL: nil) },
    BadCall(description: "empty name", kind: .badInput) { try $0.addUser(id: 4, name: "", avatarURL: nil) },
    BadCall(description: "rotate unknown", kind: .notFound) { _ = try $0.rotateToken(id: 99) },
    BadCall(description: "remove unknown", kind: .notFound) { try $0.removeUser(id: 99) },
    BadCall(description: "last connected unknown", kind: .notFound) { try $0.setLastConnected(id: 99, at: createdAt) },
    BadCall(description: "to unknown", kind: .notFound) {
      _ = try $0.post(from: 1, requestID: 1, to: 99, content: "x", createdAt: createdAt, now: baseTime)
    },
    BadCall(description: "from unknown", kind: .notFound) {
      _ = try $0.post(from: 99, requestID: 1, to: 1, content: "x", createdAt: createdAt, now: baseTime)
    },
    BadCall(description: "to self", kind: .badInput) {
      _ = try $0.post(from: 1, requestID: 1, to: 1, content: "x", createdAt: createdAt, now: baseTime)
    },
    BadCall(description: "empty content", kind: .badInput) {
      _ = try $0.post(from: 1, requestID: 1, to: 2, content: "", createdAt: createdAt, now: baseTime)
    },
    BadCall(description: "content over 65,536 bytes", kind: .badInput) {
      _ = try $0.post(
        from: 1, requestID: 1, to: 2, content: String(repeating: "é", count: 32_769), createdAt: createdAt,
        now: baseTime)
    },
    BadCall(description: "bad createdAt", kind: .badInput) {
      _ = try $0.post(from: 1, requestID: 1, to: 2, content: "x", createdAt: "yesterday", now: baseTime)
    },
    BadCall(description: "request id 0", kind: .badInput) {
      _ = try $0.post(from: 1, requestID: 0, to: 2, content: "x", createdAt: createdAt, now: baseTime)
    },
    BadCall(description: "page size 0", kind: .badInput) { _ = try $0.log(for: 1, after: 0, limit: 0) },
    BadCall(description: "page size over the maximum", kind: .badInput) {
      _ = try $0.log(for: 1, after: 0, limit: RelayStore.maximumPageSize + 1)
    },
  ]

  @Test(arguments: badCalls)
  func badInputIsRefusedWithItsKind(_ bad: BadCall) throws {
    try withRelay { store, _, _ in
      var thrown: StoreError?
      do { try bad.call(store) } catch let error as StoreError { thrown = error }
      #expect(thrown?.kind == bad.kind, "\(bad.description): \(thrown?.message ?? "no error")")
      // Nothing was posted by a refused call.
      #expect(try store.lastIssuedMessageID() == 0)
    }
  }

  @Test func errorsNameTheField() throws {
    try withRelay { store, _, _ in
      let duplicate = #expect(throws: StoreError.self) { try store.addUser(id: 2, name: "x", avatarURL: nil) }
      #expect(duplicate?.message.contains("user 2") == true)
      let unknown = #expect(throws: StoreError.self) {
        _ = try store.post(from: 1, requestID: 1, to: 77, content: "x", createdAt: createdAt, now: baseTime)
      }
      #expect(unknown?.message.contains("toUserId 77") == true)
      let content = #expect(throws: StoreError.self) {
        _ = try store.post(
          from: 1, requestID: 1, to: 2, content: String(repeating: "x", count: 65_537), createdAt: createdAt,
          now: baseTime)
      }
      #expect(content?.message.contains("content") == true)
      // Exactly 65,536 bytes is fine.
      let largest = try store.post(
        from: 1, requestID: 1, to: 2, content: String(repeating: "x", count: 65_536), createdAt: createdAt,
        now: baseTime)
      #expect(largest.isNew)
    }
  }
}
