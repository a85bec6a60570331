import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatMaintenance

/// Usage reports, eviction plans and their execution on generated histories.
@Suite(.ownThreads) struct Storage {
  /// Generated histories end at 2026-01-01; ages are measured from there.
  static let now = Date(timeIntervalSince1970: Double(HistoryGenerator.defaultEnd) / 1000)

  static func policy(_ build: (inout EvictionPolicy) -> Void) -> EvictionPolicy {
    var policy = EvictionPolicy()
    policy.now = now
    build(&policy)
    return policy
  }

  static func outbox(_ db: Database) throws -> [String] {
    try db.query("SELECT * FROM MessageRequests ORDER BY request_id") {
      $0.values.map(\.description).joined(separator: "|")
    }
  }

  static func ids(_ db: Database, _ sql: String = "SELECT id FROM Messages ORDER BY id") throws -> [Int64] {
    try db.query(sql) { $0.int64(0) }
  }

  static func evict(_ db: Database, _ policy: EvictionPolicy, options: Evictor.Options = Evictor.Options()) throws
    -> EvictionResult
  {
    try Evictor(database: db, options: options).run(policy)
  }

  // MARK: - Parsing and thresholds

  static let ages: [(String, Int64)] = [
    ("12h", 12 * 3_600_000), ("90d", 90 * 86_400_000), ("6w", 42 * 86_400_000), ("1y", 365 * 86_400_000), ("0d", 0),
  ]

  @Test(arguments: Storage.ages)
  func agesParse(text: String, milliseconds: Int64) {
    #expect(EvictionPolicy.age(text) == milliseconds)
  }

  @Test(arguments: ["", "d", "90", "90m", "-1d", "1.5d", "9999999999999999y", " 90d"])
  func badAgesAreRejected(text: String) {
    #expect(EvictionPolicy.age(text) == nil)
  }

  /// available, total, the level under the defaults (low: 10% or 1 GiB, critical: 2% or 200 MiB).
  static let disks: [(Int64, Int64, DiskLevel)] = [
    (Int64(50) << 30, Int64(100) << 30, DiskLevel.ok),
    (Int64(9) << 30, Int64(100) << 30, .low),  // under 10%
    (Int64(1) << 30, Int64(100) << 30, .critical),  // under 2%
    (Int64(900) << 20, Int64(4) << 30, .low),  // 22% but under 1 GiB
    (Int64(150) << 20, Int64(4) << 30, .critical),  // under 200 MiB
    (Int64(1) << 30, Int64(2) << 30, .ok),  // exactly 1 GiB is not below it
  ]

  @Test(arguments: Storage.disks)
  func defaultThresholds(available: Int64, total: Int64, level: DiskLevel) {
    #expect(DiskThresholds.default.level(for: DiskSpace(available: available, total: total)) == level)
  }

  @Test func customThresholdsReplaceTheDefaults() {
    let disk = DiskSpace(available: 5 << 30, total: 10 << 30)
    #expect(DiskThresholds(low: [.percent(60)], critical: [.bytes(1 << 30)]).level(for: disk) == .low)
    #expect(DiskThresholds(low: [.percent(60)], critical: [.bytes(6 << 30)]).level(for: disk) == .critical)
    #expect(DiskThresholds(low: [.bytes(0)], critical: [.percent(0)]).level(for: disk) == .ok)
  }

  // MARK: - Age

  @Test func olderThanDeletesExactlyTheOlderMessagesAndKeepsTheCutoff() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 4_000)
    let policy = Self.policy { $0.olderThan = EvictionPolicy.age("90d") }
    let cutoff = try #require(policy.cutoff)
    let ms = try #require(Timestamp.milliseconds(from: cutoff))
    // One message exactly at the cutoff (stays) and one a millisecond before (goes).
    try db.execute(
      "INSERT INTO Messages (id, from_user_id, to_user_id, content, status, created_at, conversation_id) VALUES (?, 2, 1, 'at', 'READ', ?, 2)",
      [MessageID.make(milliseconds: ms, sequence: 7), cutoff])
    try db.execute(
      "INSERT INTO Messages (id, from_user_id, to_user_id, content, status, created_at, conversation_id) VALUES (?, 2, 1, 'before', 'READ', ?, 2)",
      [MessageID.make(milliseconds: ms - 1, sequence: 7), Timestamp.string(milliseconds: ms - 1)])
    let expectedLeft = try Self.ids(db, "SELECT id FROM Messages WHERE created_at >= '\(cutoff)' ORDER BY id")
    let older = try db.int64("SELECT count(*) FROM Messages WHERE created_at < ?", [cutoff]) ?? 0
    let outbox = try Self.outbox(db)
    let users = try db.int64("SELECT count(*) FROM Users")
    #expect(older > 0 && !expectedLeft.isEmpty)

    let plan = try EvictionPlanner(database: db).plan(policy)
    let result = try Self.evict(db, policy)
    #expect(plan.messages == older)
    #expect(result.deletedMessages == older)
    #expect(try Self.ids(db) == expectedLeft)
    #expect(try db.string("SELECT content FROM Messages WHERE created_at = ?", [cutoff]) == "at")
    #expect(try db.int64("SELECT count(*) FROM Messages WHERE content = 'before'") == 0)
    #expect(try Self.outbox(db) == outbox)
    #expect(try db.int64("SELECT count(*) FROM Users") == users)
    #expect(try db.string("PRAGMA integrity_check") == "ok")
  }

  @Test func aFileWithoutTheUnreadIndexIsEvictedTheSame() throws {
    // `Messages_unread` dropped by hand (or by `chatdb index`): the age cutoff's chunks
    // read the unread messages by a walk of their id range instead (INDEXED BY failed
    // with "no such index"), and the summaries stay the list computed from the tables.
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 3_000)
    try db.execute("DROP INDEX Messages_unread")
    let policy = Self.policy { $0.olderThan = EvictionPolicy.age("30d") }
    let older = try db.int64("SELECT count(*) FROM Messages WHERE created_at < ?", [try #require(policy.cutoff)]) ?? 0
    let result = try Self.evict(db, policy)
    #expect(older > 0 && result.deletedMessages == older)
    #expect(
      try ChatRepository(database: db, ownerID: 1).conversations(limit: 1_000)
        == ConversationSummaryPropertyTests.oracle(db))
  }

  @Test func manyChunksOfDeletionMarkersAreMergedAndEndInOneSegment() throws {
    // Chunks of 4 rows: hundreds of level-0 segments of deletion markers in each search
    // index, merged 64 at a time while deleting (past `crisismerge` otherwise), then all
    // into one at the end. The result equals an eviction in large chunks.
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 3_000)
    let policy = Self.policy { $0.olderThan = EvictionPolicy.age("30d") }
    let copy = try HistoryFolder()
    try db.backup(to: copy.file("chats-1.db"))
    let reference = try Database(path: copy.file("chats-1.db"))
    _ = try Self.evict(reference, policy)
    var options = Evictor.Options()
    options.fixedChunkRows = 4
    let result = try Self.evict(db, policy, options: options)
    #expect(result.chunks > 2 * Evictor.markerSegments)
    #expect(try Self.ids(db) == Self.ids(reference))
    #expect(try SearchIndexCheck.problems(db, exact: true).isEmpty)
    for table in ["MessageSearch", "MessageSearchCJK"] {
      let levels = try #require(try SearchIndexUpkeep.levels(db, table))
      #expect(levels.map(\.segments).reduce(0, +) <= 1, "\(table): \(levels)")
    }
    #expect(try db.string("PRAGMA integrity_check") == "ok")
  }

  @Test(arguments: ["older-than", "conversation", "keep-last"])
  func chunksStoppedAtTheirDeadlineAreRedoneSmallerAndLoseNothing(policy name: String) throws {
    // Every chunk that can be stopped is (a deadline of a microsecond): each is rolled
    // back and redone at half the size until it is among the smallest, which are never
    // stopped. The result is the same as an eviction that was never stopped.
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 3_000)
    let policy = Self.policy {
      switch name {
      case "older-than": $0.olderThan = EvictionPolicy.age("30d")
      case "conversation": $0.conversations = [2]
      default:
        $0.olderThan = EvictionPolicy.age("30d")
        $0.keepLast = 5
      }
    }
    let copy = try HistoryFolder()
    try db.backup(to: copy.file("chats-1.db"))
    let reference = try Database(path: copy.file("chats-1.db"))
    let expected = try Self.evict(reference, policy)
    var options = Evictor.Options()
    options.interruptAfterMillis = 0.001
    let result = try Self.evict(db, policy, options: options)
    #expect(result.interruptedChunks > 0)
    #expect(result.deletedMessages == expected.deletedMessages && result.deletedMessages > 0)
    #expect(try Self.ids(db) == Self.ids(reference))
    #expect(try Self.outbox(db) == Self.outbox(reference))
    #expect(
      try ChatRepository(database: db, ownerID: 1).conversations(limit: 1_000)
        == ConversationSummaryPropertyTests.oracle(db))
    #expect(try SearchIndexCheck.problems(db, exact: true).isEmpty)
    #expect(try db.string("PRAGMA integrity_check") == "ok")
  }

  @Test func theSamePolicyTwiceChangesNothingMore() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 3_000)
    let policy = Self.policy { $0.olderThan = EvictionPolicy.age("30d") }
    let first = try Self.evict(db, policy)
    let left = try Self.ids(db)
    let second = try Self.evict(db, policy)
    #expect(first.deletedMessages > 0)
    #expect(second.deletedMessages == 0)
    #expect(second.freedBytes == 0)
    #expect(second.reclaim == .none)
    #expect(try Self.ids(db) == left)
  }

  @Test func planningChangesNothingAndMatchesTheRun() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 3_000)
    let before = try contents(db)
    let policy = Self.policy {
      $0.olderThan = EvictionPolicy.age("120d")
      $0.keepLast = 30
    }
    let plan = try EvictionPlanner(database: db).plan(policy)
    #expect(try contents(db) == before)
    let result = try Self.evict(db, policy)
    #expect(result.deletedMessages == plan.messages)
    #expect(
      Dictionary(uniqueKeysWithValues: plan.conversations.map { ($0.id, $0.messages) }) == result.deletedByConversation)
  }

  // MARK: - Keep-last, conversations

  @Test func keepLastLeavesTheNewestMessagesOfEveryConversation() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 3_000)
    let conversations = try db.query("SELECT DISTINCT conversation_id FROM Messages") { $0.int64(0) }
    var newest: [Int64: [Int64]] = [:]
    for c in conversations {
      newest[c] = try Self.ids(db, "SELECT id FROM Messages WHERE conversation_id = \(c) ORDER BY id DESC LIMIT 7")
        .sorted()
    }
    _ = try Self.evict(
      db,
      Self.policy {
        $0.olderThan = 0  // everything
        $0.keepLast = 7
      })
    for c in conversations {
      #expect(try Self.ids(db, "SELECT id FROM Messages WHERE conversation_id = \(c) ORDER BY id") == newest[c])
    }
  }

  @Test func evictingEveryMessageEmptiesTheSearchIndexes() throws {
    // Nothing is left to merge into: the indexes are emptied at once ('delete-all'),
    // exactly, and the outbox and its index stay.
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 2_000)
    let outbox = try Self.outbox(db)
    let policy = Self.policy {
      $0.now = Date(timeIntervalSince1970: 4_000_000_000)
      $0.olderThan = EvictionPolicy.age("1d")
    }
    let result = try Self.evict(db, policy)
    #expect(result.deletedMessages == 2_000)
    #expect(try db.int64("SELECT count(*) FROM Messages") == 0)
    #expect(try Self.outbox(db) == outbox)
    #expect(try SearchIndexCheck.problems(db, exact: true).isEmpty)
    for table in ["MessageSearch", "MessageSearchCJK"] {
      #expect(try SearchIndexUpkeep.levels(db, table)?.map(\.segments).reduce(0, +) == 0, "\(table)")
    }
    #expect(try db.string("PRAGMA integrity_check") == "ok")
  }

  @Test func aConversationAloneGoesWholeAndOnlyIt() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 3_000)
    let target = try #require(
      try db.int64("SELECT conversation_id FROM Messages GROUP BY conversation_id ORDER BY count(*) DESC LIMIT 1"))
    let others = try Self.ids(db, "SELECT id FROM Messages WHERE conversation_id <> \(target) ORDER BY id")
    let result = try Self.evict(db, Self.policy { $0.conversations = [target] })
    #expect(result.deletedMessages > 0)
    #expect(try db.int64("SELECT count(*) FROM Messages WHERE conversation_id = ?", [target]) == 0)
    #expect(try Self.ids(db) == others)
  }

  @Test func aConversationWithAnAgeTakesOnlyItsOldMessages() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 3_000)
    let target = try #require(
      try db.int64("SELECT conversation_id FROM Messages GROUP BY conversation_id ORDER BY count(*) DESC LIMIT 1"))
    let policy = Self.policy {
      $0.conversations = [target]
      $0.olderThan = EvictionPolicy.age("60d")
    }
    let cutoff = try #require(policy.cutoff)
    let expected = try Self.ids(
      db, "SELECT id FROM Messages WHERE conversation_id <> \(target) OR created_at >= '\(cutoff)' ORDER BY id")
    _ = try Self.evict(db, policy)
    #expect(try Self.ids(db) == expected)
  }

  @Test func aConversationWithOnlyPendingMessagesIsReportedAndKept() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 2_000)
    let repository = try ChatRepository(database: db, ownerID: 1)
    try repository.upsert(User(id: 999, name: "Only Pending"))
    _ = try repository.send(to: 999, content: "one")
    _ = try repository.send(to: 999, content: "two")
    let outbox = try Self.outbox(db)
    _ = try Self.evict(db, Self.policy { $0.olderThan = 0 })
    #expect(try db.int64("SELECT count(*) FROM Messages") == 0)
    #expect(try Self.outbox(db) == outbox)
    let report = try StorageReport.measure(path: db.path)
    let pending = try #require(report.conversations.first { $0.id == 999 })
    #expect(pending.messages == 0 && pending.pending == 2 && pending.name == "Only Pending")
    // Evicting that conversation by name changes nothing either.
    let result = try Self.evict(db, Self.policy { $0.conversations = [999] })
    #expect(result.deletedMessages == 0)
    #expect(try Self.outbox(db) == outbox)
  }

  /// The report measured in three passes at once (dbstat and the two halves of
  /// Messages, on three connections) equals the one measured on one connection.
  @Test func theParallelReportEqualsTheSerialOne() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 3_000)
    _ = try ChatRepository(database: db, ownerID: 1).send(to: 2, content: "queued")
    let parallel = try StorageReport.measure(path: db.path)
    let serial = try db.read { try StorageReport.measure($0, btrees: StorageReport.btrees($0)) }
    #expect(parallel.conversations == serial.conversations)
    #expect(parallel.btrees == serial.btrees)
    #expect(parallel.messages == serial.messages && parallel.messages == 3_000 && parallel.requests == serial.requests)
  }

  // MARK: - Size

  // MARK: - Dry run and run agree

  /// Every policy and combinations: name, then how to build it from the file (the
  /// largest conversation and the file's page use).
  static let dryRunPolicies: [String] = [
    "older-than", "max-size", "max-size least-recent", "conversation", "keep-last", "conversation older-than",
    "older-than keep-last", "max-size keep-last", "max-size older-than", "max-size conversation",
    "max-size least-recent keep-last", "max-size conversation keep-last older-than",
  ]

  static func build(_ name: String, conversation: Int64, usedBytes: Int64) -> EvictionPolicy {
    policy { policy in
      for word in name.split(separator: " ") {
        switch word {
        case "older-than": policy.olderThan = EvictionPolicy.age("120d")
        case "max-size": policy.maxSize = usedBytes * 6 / 10
        case "least-recent": policy.leastRecent = true
        case "conversation": policy.conversations = [conversation]
        case "keep-last":
          policy.keepLast = 25
          if policy.olderThan == nil && policy.maxSize == nil { policy.olderThan = 0 }
        default: Issue.record("unknown policy word \(word)")
        }
      }
    }
  }

  @Test(arguments: Storage.dryRunPolicies)
  func theDryRunPlansExactlyWhatTheRunDeletes(name: String) throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 8_000)
    let conversation = try #require(
      try db.int64("SELECT conversation_id FROM Messages GROUP BY conversation_id ORDER BY count(*) DESC LIMIT 1"))
    let pageSize = try #require(try db.int64("PRAGMA page_size"))
    let policy = Self.build(
      name, conversation: conversation, usedBytes: (try db.int64("PRAGMA page_count") ?? 0) * pageSize)
    let before = try Self.ids(db)
    // As `chatdb evict --dry-run` plans: its own read-only connection, in a read transaction.
    let reader = try Database(path: db.path, mode: .readOnly)
    let plan = try reader.read { try EvictionPlanner(database: $0).plan(policy) }
    #expect(plan.messages > 0)
    var small = Evictor.Options()
    small.fixedChunkRows = 333  // chunking must not change what goes
    let result = try Self.evict(db, policy, options: small)
    #expect(result.deletedMessages == plan.messages)
    #expect(
      result.deletedByConversation == Dictionary(uniqueKeysWithValues: plan.conversations.map { ($0.id, $0.messages) }))
    #expect(Int64(before.count - (try Self.ids(db)).count) == plan.messages)
    // Per conversation, what went is exactly the planned prefix.
    for part in plan.conversations {
      #expect(
        try db.int64("SELECT count(*) FROM Messages WHERE conversation_id = ? AND id <= ?", [part.id, part.lastID]) == 0
      )
    }
    if policy.maxSize != nil && plan.targetReachable && !policy.leastRecent {
      #expect(result.targetReached == true, "\(result.note ?? "")")
    }
  }

  @Test func maxSizeLandsJustUnderTheTarget() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 20_000)
    let outbox = try Self.outbox(db)
    let pageSize = try #require(try db.int64("PRAGMA page_size"))
    let used = (try db.int64("PRAGMA page_count") ?? 0) * pageSize
    let target = used * 6 / 10 + 1_000  // not a page multiple
    let result = try Self.evict(db, Self.policy { $0.maxSize = target })
    let after = (try db.int64("PRAGMA page_count") ?? 0) * pageSize
    #expect(result.targetReached == true)
    #expect(after <= target)
    // The plan is executed as planned, so it lands where the estimate (with a page of
    // slack per cut, and 2% of the search index's bytes for the way its merges pack)
    // says: some pages under the target, not the whole index's worth. (On a quiet
    // machine: 16 pages under without the search index's slack, about 36 with it.)
    #expect(target - after <= 64 * pageSize)
    #expect(result.fileSizeAfter == after)
    #expect(try Self.outbox(db) == outbox)
    // The oldest went: every message left is newer than every message deleted.
    #expect(try db.int64("SELECT count(*) FROM Messages") == 20_000 - result.deletedMessages)
  }

  @Test func maxSizeSaysWhyWhenTheOutboxAloneIsLarger() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 2_000)
    let repository = try ChatRepository(database: db, ownerID: 1)
    for i in 0..<300 { _ = try repository.send(to: 2, content: String(repeating: "x", count: 2_000) + "\(i)") }
    let outbox = try Self.outbox(db)
    let result = try Self.evict(db, Self.policy { $0.maxSize = 64 << 10 })
    #expect(result.targetReached == false)
    #expect(result.note?.contains("outbox") == true)
    #expect(try db.int64("SELECT count(*) FROM Messages") == 0)
    #expect(try Self.outbox(db) == outbox)
    let plan = try EvictionPlanner(database: db).plan(Self.policy { $0.maxSize = 64 << 10 })
    #expect(!plan.targetReachable)
  }

  @Test func leastRecentRemovesWholeConversationsLeastRecentlyActiveFirst() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 10_000)
    let byActivity = try db.query("SELECT conversation_id FROM Messages GROUP BY conversation_id ORDER BY max(id)") {
      $0.int64(0)
    }
    let pageSize = try #require(try db.int64("PRAGMA page_size"))
    let used = (try db.int64("PRAGMA page_count") ?? 0) * pageSize
    let result = try Self.evict(
      db,
      Self.policy {
        $0.maxSize = used * 8 / 10
        $0.leastRecent = true
      })
    let left = try db.query("SELECT conversation_id, count(*) FROM Messages GROUP BY conversation_id") {
      ($0.int64(0), $0.int64(1))
    }
    let gone = Set(byActivity).subtracting(left.map(\.0))
    #expect(!gone.isEmpty)
    // The conversations gone are exactly the least recently active ones, each whole.
    #expect(Array(byActivity.prefix(gone.count)).sorted() == gone.sorted())
    // Whole conversations are scattered over the table's pages, which stay partly
    // filled: the estimate can fall short, and then the result says so.
    if result.targetReached != true {
      #expect(result.note?.contains("over the target") == true, "\(result.note ?? "")")
    }
  }

  @Test func theSamePolicyOnTheSameFileDeletesTheSameMessages() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 8_000)
    try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    let copy = folder.file("copy.db")
    try db.backup(to: copy)
    let other = try Database(path: copy)
    let pageSize = try #require(try db.int64("PRAGMA page_size"))
    let policy = Self.policy {
      $0.maxSize = (try? db.int64("PRAGMA page_count")).flatMap { $0 }.map { $0 * pageSize / 2 }
      $0.keepLast = 3
    }
    var small = Evictor.Options()
    small.fixedChunkRows = 97
    let a = try Self.evict(db, policy)
    let b = try Self.evict(other, policy, options: small)
    #expect(a.deletedMessages == b.deletedMessages)
    #expect(try Self.ids(db) == Self.ids(other))
  }

  // MARK: - Reclaiming

  @Test func aFileWithoutAutoVacuumIsVacuumedOnceAndConverted() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 5_000)
    try db.execute("PRAGMA auto_vacuum = NONE")
    try db.execute("VACUUM")
    #expect(try db.int64("PRAGMA auto_vacuum") == 0)
    let result = try Self.evict(db, Self.policy { $0.olderThan = EvictionPolicy.age("60d") })
    #expect(result.reclaim == .vacuum)
    #expect(result.freedBytes > 0)
    #expect(try db.int64("PRAGMA auto_vacuum") == 2)
    #expect(try db.int64("PRAGMA freelist_count") == 0)
    #expect(try db.string("PRAGMA integrity_check") == "ok")
  }

  @Test func aFileWithoutFreePagesReportsNoneAndAnEmptyPlanFreesNothing() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 1_000)
    try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    let report = try StorageReport.measure(path: db.path)
    #expect(report.freePages == 0)
    #expect(report.messages == 1_000)
    let result = try Self.evict(db, Self.policy { $0.olderThan = EvictionPolicy.age("1000d") })
    #expect(result.deletedMessages == 0)
    #expect(result.reclaim == .none)
    #expect(result.freedBytes == 0)
  }

  // MARK: - Usage

  @Test func usageAddsUpToTheFile() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 3_000)
    let report = try StorageReport.measure(path: db.path)
    #expect(report.messages == 3_000)
    #expect(report.conversations.reduce(0) { $0 + $1.messages } == 3_000)
    // Every page is a table's, an index's, free, or one of auto_vacuum's pointer-map pages
    // (one per pageSize / 5 pages).
    let pointerMapPages = report.pointerMapBytes / report.pageSize
    #expect(report.pointerMapBytes % report.pageSize == 0)
    #expect(pointerMapPages >= 1 && pointerMapPages <= report.pageCount / (report.pageSize / 5) + 1)
    let messagePages = report.btrees.filter { $0.table == "Messages" }.reduce(0) { $0 + $1.bytes }
    let conversationBytes = report.conversations.reduce(0) { $0 + $1.bytes }
    #expect(abs(conversationBytes - messagePages) <= Int64(report.conversations.count))
    #expect(report.conversations == report.conversations.sorted { $0.bytes > $1.bytes })
    let requests = try db.int64("SELECT count(*) FROM MessageRequests WHERE status IN ('PENDING', 'SENT')") ?? 0
    #expect(report.conversations.reduce(0) { $0 + $1.pending } == requests)
    let first = try #require(report.conversations.first)
    #expect(
      first.oldest == (try db.string("SELECT min(created_at) FROM Messages WHERE conversation_id = ?", [first.id])))
    #expect(
      first.newest == (try db.string("SELECT max(created_at) FROM Messages WHERE conversation_id = ?", [first.id])))
  }

  @Test func suggestionsComeFromThePlanner() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 5_000)
    let suggestions = try StorageSuggestion.suggest(path: db.path, needed: 1 << 40, now: Self.now)
    let byAge = try #require(suggestions.first { $0.arguments == ["--older-than", "180d"] })
    var policy = Self.policy { $0.olderThan = EvictionPolicy.age("180d") }
    policy.now = Self.now
    let plan = try EvictionPlanner(database: db).plan(policy)
    #expect(byAge.messages == plan.messages)
    #expect(byAge.frees == plan.fileBytes - (plan.expectedSize ?? 0))
    #expect(!byAge.enough)
  }

  // MARK: - The caller's connection

  @Test(arguments: ["older-than keep-last", "max-size", "conversation"])
  func evictionRestoresTheConnectionSettings(name: String) throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 4_000)
    try unusualSettings(db)
    let before = try connectionSettings(db)
    let conversation = try #require(try db.int64("SELECT max(conversation_id) FROM Messages"))
    let pageSize = try #require(try db.int64("PRAGMA page_size"))
    let policy = Self.build(
      name, conversation: conversation, usedBytes: (try db.int64("PRAGMA page_count") ?? 0) * pageSize)
    let result = try Self.evict(db, policy)
    #expect(result.deletedMessages > 0)
    #expect(try connectionSettings(db) == before)
  }

  @Test func aFailedEvictionRestoresTheConnectionSettings() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 2_000)
    try unusualSettings(db)
    try db.execute("PRAGMA busy_timeout = 20")
    let before = try connectionSettings(db)
    // Another connection holds the write lock: the first delete chunk cannot start.
    let other = try Database(path: db.path)
    try other.execute("BEGIN IMMEDIATE")
    defer { try? other.execute("ROLLBACK") }
    #expect(throws: StoreError.self) { _ = try Self.evict(db, Self.policy { $0.olderThan = 0 }) }
    #expect(try connectionSettings(db) == before)
  }

  // MARK: - A writer at the same time

  /// How long the test waits for the writer at most before it gives up: a bound
  /// against hanging, not a figure under test (the benchmark script measures waits).
  static let writerDeadline: TimeInterval = 60

  /// Waits until `done` or the deadline; false when the deadline passed.
  static func wait(until done: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(writerDeadline)
    while !done() {
      if Date() > deadline { return false }
      usleep(1_000)
    }
    return true
  }

  @Test func aConcurrentWriterKeepsWritingDuringEviction() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 60_000)
    let path = db.path
    let log = WriterLog()
    let writer = Thread {
      do {
        let repository = try ChatRepository(database: Database(path: path), ownerID: 1)
        while !log.stopped {
          _ = try repository.send(to: 2, content: "while evicting")
          log.record(at: Date())
          usleep(2_000)
        }
      } catch {
        log.fail(error)
      }
      log.finish()
    }
    writer.start()
    // However the test ends (an expectation, a throw), the writer stops.
    defer {
      log.stop()
      _ = Self.wait { log.finished }
    }
    // The writer's failure ends the wait at once; so does the deadline.
    #expect(Self.wait { log.count >= 3 || log.finished }, "the writer made no progress")
    try #require(log.error == nil, "a write failed: \(String(describing: log.error))")
    let started = Date()
    let result = try Self.evict(db, Self.policy { $0.olderThan = 0 })
    let ended = Date()
    log.stop()
    #expect(Self.wait { log.finished }, "the writer did not stop")
    #expect(log.error == nil, "a write failed: \(String(describing: log.error))")
    #expect(result.deletedMessages == 60_000)
    #expect(result.chunks > 1)
    // Writes got in between the chunks, not only after the eviction.
    #expect(log.writes(between: started, and: ended) > 0)
    #expect(try db.string("PRAGMA integrity_check") == "ok")
  }
}

/// What the writer thread saw. `@unchecked Sendable`: every field is behind `lock`.
final class WriterLog: @unchecked Sendable {
  private let lock = NSLock()
  private var writes: [Date] = []
  private var failure: (any Error)?
  private var stopFlag = false
  private var done = false

  var stopped: Bool { lock.withLock { stopFlag } }
  /// The thread has returned (after a failure too: it records the failure, then returns).
  var finished: Bool { lock.withLock { done } }
  var count: Int { lock.withLock { writes.count } }
  var error: (any Error)? { lock.withLock { failure } }
  func record(at date: Date) { lock.withLock { writes.append(date) } }
  func fail(_ error: any Error) { lock.withLock { failure = error } }
  func stop() { lock.withLock { stopFlag = true } }
  func finish() { lock.withLock { done = true } }
  func writes(between start: Date, and end: Date) -> Int {
    lock.withLock { writes.filter { $0 > start && $0 < end }.count }
  }
}
