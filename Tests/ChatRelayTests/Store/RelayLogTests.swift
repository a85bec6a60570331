import ChatProtocol
import ChatStore
import TestSupport
import Testing

@testable import ChatRelay

/// Issue 27: the relay keeps a log per user with a cursor per device; what leaves it,
/// and when, depends on the retention.
@Suite(.ownThreads) struct RelayLogTests {
  /// What `relay.db` holds: messages and idempotency records.
  static func rows(_ store: RelayStore) throws -> (messages: Int64, requests: Int64) {
    (
      try store.db.int64("SELECT count(*) FROM RelayMessages") ?? -1,
      try store.db.int64("SELECT count(*) FROM RelayRequests") ?? -1
    )
  }

  @Test func aMessageIsStoredOnceAndIsInBothLogs() throws {
    try withRelay { store, _, _ in
      let laptop = try store.addDevice(user: 1, name: "laptop", now: baseTime).device
      let sent = try store.post(
        from: 1, device: laptop.id, requestID: 3, to: 2, content: "hi", createdAt: createdAt, now: baseTime)
      #expect(sent.place == LogPlace(sender: 0, recipient: 0))
      let reply = try store.post(from: 2, requestID: 1, to: 1, content: "yo", createdAt: createdAt, now: baseTime + 1)
      #expect(reply.place == LogPlace(sender: sent.message.messageId, recipient: sent.message.messageId))
      #expect(try Self.rows(store) == (2, 2))
      // Ada's log: her own message (with the laptop's request id) and Bob's reply.
      let ada = try store.log(for: 1, after: 0, limit: 10)
      #expect(ada.messages.map(\.messageId) == [sent.message.messageId, reply.message.messageId])
      #expect(ada.messages[0].fromDeviceId == laptop.id && ada.messages[0].requestId == 3)
      #expect(ada.messages[1].fromDeviceId == nil && ada.messages[1].requestId == nil)
      // The idempotency record keeps the content's SHA-256, not the content.
      #expect(try store.db.int64("SELECT count(*) FROM RelayRequests WHERE content IS NULL") == 2)
      // Linus's log is empty.
      #expect(try store.log(for: 3, after: 0, limit: 10).messages.isEmpty)
    }
  }

  @Test func statusesInAPageAreWhatTheRelayKnows() throws {
    try withRelay { store, _, _ in
      let m1 = try store.post(from: 1, requestID: 1, to: 2, content: "a", createdAt: createdAt, now: baseTime).message
      let m2 = try store.post(from: 1, requestID: 2, to: 2, content: "b", createdAt: createdAt, now: baseTime + 1)
        .message
      _ = try store.post(from: 1, requestID: 3, to: 2, content: "c", createdAt: createdAt, now: baseTime + 2)
      try store.acknowledgeDelivery(by: 2, ids: [m1.messageId, m2.messageId])
      _ = try store.markRead(by: 2, conversation: 1, upTo: m1.messageId)
      let statuses = ["READ", "DELIVERED", "SYNCED"]
      #expect(try store.log(for: 1, after: 0, limit: 10).messages.map(\.status) == statuses)
      #expect(try store.log(for: 2, after: 0, limit: 10).messages.map(\.status) == statuses)
    }
  }

  @Test func updatesLeaveOnceEveryDeviceOfTheUserStoredThem() throws {
    try withRelay { store, _, _ in
      let laptop = try store.addDevice(user: 1, name: "laptop", now: baseTime).device
      let m = try store.post(from: 1, requestID: 1, to: 2, content: "a", createdAt: createdAt, now: baseTime).message
      let update = try #require(try store.acknowledgeDelivery(by: 2, ids: [m.messageId]).first)
      try store.acknowledgeSync(user: 1, device: 1, messages: 0, updates: update.sequence, retention: .days(30))
      #expect(try store.statusUpdates(for: 1, after: 0).count == 1, "the laptop has not stored it")
      try store.acknowledgeSync(user: 1, device: laptop.id, messages: 0, updates: update.sequence, retention: .days(30))
      #expect(try store.statusUpdates(for: 1, after: 0).isEmpty)
      // A device added later starts past what was there (it reads statuses from its pages).
      let tablet = try store.addDevice(user: 1, name: "tablet", now: baseTime).device
      #expect(tablet.syncedMessage == m.messageId)
    }
  }

  @Test func withRetentionZeroAMessageLeavesOnceEveryDeviceOfBothPartiesAcknowledgedIt() throws {
    try withRelay { store, _, _ in
      let laptop = try store.addDevice(user: 2, name: "laptop", now: baseTime).device
      let m = try store.post(from: 1, requestID: 1, to: 2, content: "a", createdAt: createdAt, now: baseTime).message
      // A device added after the message was written holds nothing back.
      let tablet = try store.addDevice(user: 2, name: "tablet", now: baseTime).device
      let ack = { (user: Int64, device: Int64) in
        try store.acknowledgeSync(
          user: user, device: device, messages: m.messageId, updates: 0, retention: .untilAcknowledged)
      }
      try ack(2, 2)
      try ack(1, 1)
      #expect(try Self.rows(store).messages == 1, "Bob's laptop has not acknowledged it")
      // Removing the laptop releases it at the next sweep.
      try store.removeDevice(user: 2, device: laptop.id)
      _ = tablet
      try store.sweep(now: baseTime + 1_000, retention: .untilAcknowledged, idempotencyWindow: 7 * 86_400_000)
      #expect(try Self.rows(store) == (0, 1), "only the idempotency record is left")
      // A retry still gets the same message.
      let retry = try store.post(
        from: 1, requestID: 1, to: 2, content: "a", createdAt: createdAt, now: baseTime + 2_000)
      #expect(!retry.isNew && retry.message.messageId == m.messageId)
    }
  }

  @Test func withRetentionZeroTheLastAcknowledgementDeletesAtOnce() throws {
    try withRelay { store, _, _ in
      let m = try store.post(from: 1, requestID: 1, to: 2, content: "a", createdAt: createdAt, now: baseTime).message
      try store.acknowledgeSync(user: 2, device: 2, messages: m.messageId, updates: 0, retention: .untilAcknowledged)
      #expect(try Self.rows(store).messages == 1)
      try store.acknowledgeSync(user: 1, device: 1, messages: m.messageId, updates: 0, retention: .untilAcknowledged)
      #expect(try Self.rows(store).messages == 0)
      // With a window, acknowledgements delete nothing.
      let n = try store.post(from: 1, requestID: 2, to: 2, content: "b", createdAt: createdAt, now: baseTime).message
      try store.acknowledgeSync(user: 2, device: 2, messages: n.messageId, updates: 0, retention: .days(30))
      try store.acknowledgeSync(user: 1, device: 1, messages: n.messageId, updates: 0, retention: .days(30))
      #expect(try Self.rows(store).messages == 1)
    }
  }

  @Test func aSilentDeviceHoldsNothingPastTheWindow() throws {
    try withRelay { store, _, _ in
      let day: Int64 = 86_400_000
      for i in 1...5 {
        _ = try store.post(
          from: 1, requestID: Int64(i), to: 2, content: "m\(i)", createdAt: createdAt, now: baseTime + Int64(i) * day)
      }
      _ = try store.acknowledgeDelivery(
        by: 2, ids: try store.log(for: 2, after: 0, limit: 10).messages.map(\.messageId), now: baseTime + 5 * day + 1)
      // Nobody acknowledged a sync cursor; with a 2-day window at day 6, days 1 to 3 leave.
      try store.sweep(now: baseTime + 6 * day, retention: .days(2), idempotencyWindow: 7 * day)
      #expect(try store.log(for: 2, after: 0, limit: 10).messages.map(\.content) == ["m4", "m5"])
      #expect(try Self.rows(store) == (2, 5), "idempotency records outlive their messages")
      // Updates leave by when they were recorded (day 5: still in the window).
      #expect(try store.statusUpdates(for: 1, after: 0).count == 5)
      // After the idempotency window, the records of messages gone leave too.
      try store.sweep(now: baseTime + 20 * day, retention: .days(2), idempotencyWindow: 7 * day)
      #expect(try Self.rows(store) == (0, 0))
      #expect(try store.statusUpdates(for: 1, after: 0).isEmpty)
      // A batch bound: a sweep deletes at most `batch` messages.
      for i in 6...10 {
        _ = try store.post(from: 1, requestID: Int64(i), to: 2, content: "n", createdAt: createdAt, now: baseTime)
      }
      #expect(try store.sweep(now: baseTime + 30 * day, retention: .days(2), idempotencyWindow: 7 * day, batch: 3) == 3)
      #expect(try Self.rows(store).messages == 2)
    }
  }

  /// A push record's badge is the recipient's count of messages no device of theirs stored
  /// (kept by triggers, not counted at each push): exact through posts, deliveries,
  /// retention-0 drops and sweeps.
  @Test func thePushBadgeIsTheCountOfUndeliveredMessages() throws {
    try withRelay { store, _, _ in
      let counted = { (user: Int64) in
        try store.db.int64(
          "SELECT count(*) FROM RelayMessages WHERE to_user_id = ? AND delivered_at IS NULL", [user]) ?? -1
      }
      let push = { (user: Int64) in try store.recordPush(to: user, messageId: 1, at: createdAt).unread }
      var ids: [Int64] = []
      for i in 1...6 {
        ids.append(
          try store.post(from: 1, requestID: Int64(i), to: 2, content: "m\(i)", createdAt: createdAt, now: baseTime)
            .message.messageId)
      }
      _ = try store.post(from: 2, requestID: 1, to: 1, content: "r", createdAt: createdAt, now: baseTime)
      #expect(try push(2) == 6 && push(1) == 1)
      // A replay adds nothing; a delivery (and its repeat) takes off each once.
      _ = try store.post(from: 1, requestID: 1, to: 2, content: "m1", createdAt: createdAt, now: baseTime)
      _ = try store.acknowledgeDelivery(by: 2, ids: Array(ids.prefix(2)))
      _ = try store.acknowledgeDelivery(by: 2, ids: Array(ids.prefix(3)))
      #expect(try push(2) == 3 && counted(2) == 3)
      // Messages leaving the relay undelivered take their count with them.
      try store.sweep(now: baseTime + 40 * 86_400_000, retention: .days(30), idempotencyWindow: 86_400_000)
      #expect(try push(2) == 0 && push(1) == 0 && counted(2) == 0)
    }
  }

  /// Migration 0004 counts what a version-3 file already holds undelivered.
  @Test func aVersionThreeFileGetsItsUndeliveredCounts() throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/relay.db"
      do {
        let db = try Database(path: path, mode: .create)
        let migrator = Migrator(migrations: Array(RelaySchema.migrations.prefix(3)))
        let plan = try migrator.plan(for: try db.read { try migrator.status(of: $0) })
        _ = try migrator.apply(plan, to: db, owner: nil)
        try db.execute("INSERT INTO RelayUsers (id, name) VALUES (1, 'Ada'), (2, 'Bob'), (3, 'Cy')")
        for (id, to, delivered) in [(Int64(10), Int64(2), false), (11, 2, true), (12, 2, false), (13, 1, false)] {
          try db.execute(
            "INSERT INTO RelayMessages (id, from_user_id, to_user_id, content, created_at, delivered_at) VALUES (?, ?, ?, 'x', ?, ?)",
            [id, to == 2 ? 1 : 2, to, createdAt, delivered ? createdAt : nil])
        }
      }
      let store = try RelayStore(path: path)
      #expect(try store.schemaVersion() == RelaySchema.latestVersion)
      let counts = try store.db.query("SELECT id, undelivered FROM RelayUsers ORDER BY id") {
        [$0.int64(0), $0.int64(1)]
      }
      #expect(counts == [[1, 1], [2, 2], [3, 0]])
    }
  }

  @Test func aDeviceListSaysHowFarBehindEachDeviceIs() throws {
    try withRelay { store, _, _ in
      var last: Int64 = 0
      for i in 1...4 {
        last = try store.post(
          from: 2, requestID: Int64(i), to: 1, content: "m", createdAt: createdAt, now: baseTime + Int64(i)
        ).message.messageId
      }
      let laptop = try store.addDevice(user: 1, name: "laptop", now: baseTime).device
      #expect(try store.devices(of: 1).map(\.lag) == [4, 0])
      try store.acknowledgeSync(user: 1, device: 1, messages: last, updates: 0, retention: .days(30))
      _ = try store.post(
        from: 1, device: laptop.id, requestID: 1, to: 2, content: "r", createdAt: createdAt, now: baseTime + 9)
      #expect(try store.devices(of: 1).map(\.lag) == [1, 1])
    }
  }
}
