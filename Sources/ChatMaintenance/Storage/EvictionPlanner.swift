import ChatStore
import Foundation

/// What an eviction would remove: per conversation, the messages to go (always the
/// oldest ones: a prefix by id) and their estimated bytes, and the file size after.
///
/// `chatdb evict --dry-run` prints it, `chatdb usage` uses it for its suggestions and
/// `Evictor` executes it, so all three agree.
public struct EvictionPlan: Sendable {
  /// One conversation's share of the plan.
  public struct Conversation: Sendable, Equatable {
    /// The other user's id.
    public var id: Int64
    /// Messages to delete.
    public var messages: Int64
    /// Their estimated share of the file, in bytes (nil when not estimated).
    public var bytes: Int64?
    /// The newest message id to delete: every message of the conversation up to it goes.
    public var lastID: Int64
  }

  /// The policy planned for.
  public var policy: EvictionPolicy
  /// `policy.cutoff`, when an age was given.
  public var cutoff: String?
  /// Conversations with something to delete, by id.
  public var conversations: [Conversation]
  /// Messages to delete in all.
  public var messages: Int64
  /// Their estimated bytes (nil when not estimated).
  public var bytes: Int64?
  /// SQLite page size.
  public var pageSize: Int64
  /// The database file and its `-wal` now (`FileSystem.databaseSize`).
  public var fileBytes: Int64
  /// Pages in use now (file pages minus free pages), in bytes: the file's size once
  /// its free pages are given back.
  public var usedBytes: Int64
  /// Free pages now, in bytes (given back by the reclaim step).
  public var freeBytes: Int64
  /// The database file's expected size after eviction and reclaim (nil when not estimated).
  public var expectedSize: Int64?
  /// With `maxSize`: whether the plan gets the file under it.
  public var targetReachable: Bool
  /// Why the target cannot be reached, when it cannot.
  public var note: String?
  /// Conversations the policy names that have no messages in this file (a typo, or
  /// already evicted): nothing is planned for them, and the commands say so.
  public var unknownConversations: [Int64] = []
  /// Set when the plan is simply "every message with an id up to this": no scope, no
  /// keep-last, no size step. The executor then deletes plain id ranges.
  public var uniformLastID: Int64?
  /// With `editHistoryOlderThan`: the older versions made before its cutoff, and their
  /// text's bytes, that go (with their message, or alone).
  public var editVersions: Int64 = 0
  public var editBytes: Int64 = 0
  /// Media files removed, and media rows that go with the messages.
  public var media = MediaPlan()
}

/// Turns a policy into an `EvictionPlan` for one file.
///
/// Bytes are estimated per message as `(content bytes + 110) × scale`, where 110 bytes
/// stands for the other columns, the cell and the index entries of a row, and `scale`
/// makes the estimates of all messages add up to the pages `dbstat` says `Messages`
/// and its indexes really use. See <https://sqlite.org/dbstat.html>.
public struct EvictionPlanner {
  /// Bytes a message takes besides its content (other columns, cell, index entries),
  /// before scaling to the file's real page use.
  public static let rowOverhead: Int64 = 110

  /// How message bytes map to file bytes in this file.
  public struct Footprint: Sendable, Equatable {
    /// File bytes per (content bytes + `rowOverhead`).
    public var scale: Double
    /// Bytes of every b-tree (`dbstat`), by name.
    public var btreeBytes: [String: Int64]

    func bytes(content: Int64, rows: Int64) -> Double { Double(content + rows * EvictionPlanner.rowOverhead) * scale }
  }

  let db: Database

  public init(database: Database) { self.db = database }

  /// Plans `policy`. `estimateBytes: false` skips the byte estimates (a scan of the
  /// content) when only the messages matter; a `maxSize` policy always estimates.
  public func plan(_ policy: EvictionPolicy, estimateBytes: Bool = true) throws -> EvictionPlan {
    try plan(policy, footprint: estimateBytes || policy.maxSize != nil ? try footprint() : nil)
  }

  /// Measures the footprint model of this file (a `dbstat` pass and a content scan).
  public func footprint() throws -> Footprint {
    var btrees: [String: Int64] = [:]
    try db.prepare("SELECT name, pgsize FROM dbstat WHERE aggregate = TRUE").forEachRow {
      btrees[$0.string(0)] = $0.int64(1)
    }
    // The message search indexes' shadow tables (MessageSearch_data, …) shrink with the rows too.
    let names = Set(
      try db.query(
        "SELECT name FROM sqlite_schema WHERE (tbl_name = 'Messages' OR name GLOB 'MessageSearch*_*') AND type IN ('table', 'index')"
      ) { $0.string(0) })
    let messagePages = btrees.filter { names.contains($0.key) }.values.reduce(0, +)
    let (rows, content) =
      try db.prepare("SELECT count(*), coalesce(sum(length(CAST(content AS BLOB))), 0) FROM Messages").first {
        ($0.int64(0), $0.int64(1))
      }
      ?? (0, 0)
    let model = Double(content + rows * Self.rowOverhead)
    return Footprint(scale: rows > 0 && model > 0 ? Double(messagePages) / model : 1, btreeBytes: btrees)
  }

  /// The plan, with a known footprint.
  func plan(_ policy: EvictionPolicy, footprint: Footprint?) throws -> EvictionPlan {
    var plan = try planMessages(policy, footprint: footprint)
    plan.media = try MediaPlanner(db: db).plan(policy, messages: plan)
    if policy.mediaOnly {
      // The messages stay: only their media's files go.
      plan.conversations = []
      plan.messages = 0
      plan.bytes = plan.bytes == nil ? nil : 0
      plan.expectedSize = plan.expectedSize == nil ? nil : plan.usedBytes
      plan.uniformLastID = nil
    }
    if let cutoff = policy.editHistoryCutoff {
      (plan.editVersions, plan.editBytes) =
        try db.prepare(
          "SELECT count(*), coalesce(sum(length(CAST(content AS BLOB))), 0) FROM MessageEdits WHERE edited_at < ?1"
        ).first([cutoff]) { ($0.int64(0), $0.int64(1)) } ?? (0, 0)
    }
    return plan
  }

  private func planMessages(_ policy: EvictionPolicy, footprint: Footprint?) throws -> EvictionPlan {
    let pageSize = try db.int64("PRAGMA page_size") ?? 4096
    let pageCount = try db.int64("PRAGMA page_count") ?? 0
    let freePages = try db.int64("PRAGMA freelist_count") ?? 0
    let usedBytes = (pageCount - freePages) * pageSize
    let cutoff = policy.cutoff
    let scope = Set(policy.conversations)
    let present = try conversationIDs()
    let conversations = present.filter { scope.isEmpty || scope.contains($0) }
    let unknown = scope.subtracting(present).sorted()

    // Messages at or after the cutoff start with this id; everything below it is older
    // (ids rise with time; a message with a smaller id but a newer time stops the cut).
    var ageBound: Int64?
    if let cutoff {
      let firstKept = try db.int64(HotQuery.firstMessageAtOrAfter.sql, [cutoff])
      ageBound = firstKept.map { $0 - 1 } ?? Int64.max
    }
    let whole = policy.olderThan == nil && policy.maxSize == nil && !scope.isEmpty

    // Per conversation: the newest id that may go (keep-last) and the base bound.
    let kthNewest = try db.prepare(HotQuery.nthNewestMessage.sql)
    var cap: [Int64: Int64] = [:]
    var bound: [Int64: Int64] = [:]
    for id in conversations {
      var limit = Int64.max
      if policy.keepLast > 0 {
        limit = try kthNewest.first([id, Int64(policy.keepLast - 1)]) { $0.int64(0) }.map { $0 - 1 } ?? Int64.min
      }
      cap[id] = limit
      let base: Int64? = whole ? Int64.max : ageBound
      if let base { bound[id] = min(base, limit) }
    }

    // The base plan: counts (and bytes) of each conversation's prefix.
    let measure = try db.prepare(
      footprint == nil ? HotQuery.conversationRange.sql : HotQuery.conversationRangeBytes.sql)
    var parts: [Int64: (messages: Int64, content: Int64, lastID: Int64)] = [:]
    for id in conversations {
      guard let b = bound[id], b > Int64.min else { continue }
      if let row = try measure.first([id, Int64.min, b], { ($0.int64(0), $0.int64(1), $0.int64(2)) }), row.0 > 0 {
        parts[id] = (row.0, row.2, row.1)
      }
    }
    func plannedBytes() -> Double {
      guard let footprint else { return 0 }
      return parts.values.reduce(0) { $0 + footprint.bytes(content: $1.content, rows: $1.messages) }
    }

    // The size step: more of the oldest messages (or whole conversations) until the
    // estimated size is under the target.
    var targetReachable = true
    var note: String?
    var uniform = scope.isEmpty && policy.keepLast == 0 ? ageBound : nil
    if let target = policy.maxSize, let footprint {
      let excess = Double(usedBytes) - plannedBytes() - Double(target)
      if excess > 0 {
        var gained = 0.0
        // The estimate counts whole rows, but a delete ends mid-page in every b-tree it
        // cuts: about a page stays in use at each cut (the table and its time-ordered
        // indexes once, the conversation index once per conversation). Without this the
        // executed plan lands a few pages over the target.
        var needed = excess + Double(pageSize) * Double(3 + parts.count)
        // The search indexes' segments pack differently with the size of each merge
        // step, which follows the machine's speed: one plan on a 20,000-message file
        // landed 16 pages under its target on a quiet machine and 3 over on a busy one.
        // 2% of their bytes is kept in hand for that.
        needed += 0.02 * Double(footprint.btreeBytes.filter { $0.key.hasPrefix("MessageSearch") }.values.reduce(0, +))
        func take(_ id: Int64, messages: Int64, content: Int64, lastID: Int64) {
          let old = parts[id] ?? (0, 0, Int64.min)
          if parts[id] == nil { needed += Double(pageSize) }
          parts[id] = (old.messages + messages, old.content + content, max(old.lastID, lastID))
          gained += footprint.bytes(content: content, rows: messages)
          uniform = nil
        }
        if policy.leastRecent {
          let newest = try db.prepare(HotQuery.newestMessageOfConversation.sql)
          let order = try conversations.map { ($0, try newest.first([$0]) { $0.int64(0) } ?? 0) }.sorted {
            ($0.1, $0.0) < ($1.1, $1.0)
          }
          for (id, _) in order where gained < needed {
            let from = parts[id]?.lastID ?? Int64.min
            guard let limit = cap[id], limit > from,
              let row = try measure.first([id, from, limit], { ($0.int64(0), $0.int64(1), $0.int64(2)) }), row.0 > 0
            else { continue }
            take(id, messages: row.0, content: row.2, lastID: row.1)
          }
        } else {
          let start = ageBound.map { $0 == Int64.max ? $0 : $0 + 1 } ?? Int64.min
          let scan = try db.prepare(HotQuery.messagesFromID.sql)
          if start < Int64.max {
            let allowed = Set(conversations)
            try scan.forEachRowUntil([start]) { row in
              let id = row.int64(0)
              let conversation = row.int64(1)
              guard allowed.contains(conversation), id > (parts[conversation]?.lastID ?? Int64.min),
                id <= (cap[conversation] ?? Int64.min)
              else { return true }
              take(conversation, messages: 1, content: row.int64(2), lastID: id)
              return gained < needed
            }
          }
        }
      }
      let expected = Double(usedBytes) - plannedBytes()
      if expected > Double(target) {
        targetReachable = false
        note = Self.explain(target: target, expected: Int64(expected), footprint: footprint, policy: policy)
      }
    }

    let planned = parts.keys.sorted().map { id -> EvictionPlan.Conversation in
      let part = parts[id]!
      return EvictionPlan.Conversation(
        id: id, messages: part.messages,
        bytes: footprint.map { Int64($0.bytes(content: part.content, rows: part.messages).rounded()) },
        lastID: part.lastID)
    }
    let bytes = footprint.map { _ in planned.reduce(0) { $0 + ($1.bytes ?? 0) } }
    let expected = bytes.map { b -> Int64 in
      let after = max(usedBytes - b, pageSize)
      return (after + pageSize - 1) / pageSize * pageSize
    }
    var plan = EvictionPlan(
      policy: policy, cutoff: cutoff, conversations: planned, messages: planned.reduce(0) { $0 + $1.messages },
      bytes: bytes,
      pageSize: pageSize, fileBytes: FileSystem.databaseSize(atPath: db.path), usedBytes: usedBytes,
      freeBytes: freePages * pageSize, expectedSize: expected, targetReachable: targetReachable, note: note,
      uniformLastID: planned.isEmpty ? nil : uniform)
    plan.unknownConversations = unknown
    return plan
  }

  /// Every conversation with messages (`HotQuery.conversationIDs`).
  func conversationIDs() throws -> [Int64] {
    try db.query(HotQuery.conversationIDs.sql) { $0.int64(0) }
  }

  /// Why a size target is out of reach: what stays in the file.
  static func explain(target: Int64, expected: Int64, footprint: Footprint, policy: EvictionPolicy) -> String {
    let outbox = footprint.btreeBytes.filter {
      $0.key.hasPrefix("MessageRequests") || $0.key == "sqlite_autoindex_MessageRequests_1"
    }
    .values.reduce(0, +)
    var kept: [String] = []
    if policy.keepLast > 0 { kept.append("--keep-last \(policy.keepLast)") }
    if !policy.conversations.isEmpty { kept.append("other conversations") }
    if policy.olderThan != nil && policy.maxSize == nil { kept.append("newer messages") }
    let keptText = kept.isEmpty ? "" : " and messages the policy keeps (\(kept.joined(separator: ", ")))"
    return
      "cannot get under \(target) bytes: with every message the policy allows removed the file is still about \(expected) bytes; "
      + "the outbox (MessageRequests, never evicted) takes \(outbox) bytes, plus users, schema\(keptText)"
  }
}

extension Statement {
  /// Binds `arguments` and calls `body` for each row until it returns false; resets afterwards.
  func forEachRowUntil(_ arguments: [any DatabaseValueConvertible], _ body: (Row) throws -> Bool) throws {
    var stop = false
    do {
      try forEachRow(arguments) { row in
        guard !stop else { return }
        if try !body(row) {
          stop = true
          throw StopIteration()
        }
      }
    } catch is StopIteration {}
  }
}

private struct StopIteration: Error {}
