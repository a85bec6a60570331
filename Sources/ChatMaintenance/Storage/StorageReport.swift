import ChatStore
import Foundation

/// What takes the space in one chat database: the files, free pages, unused room inside
/// pages and what a `VACUUM` would give back, every table and index (from `dbstat`)
/// and every conversation.
///
/// ```swift
/// let report = try StorageReport.measure(path: "chats-1.db")
/// print(report.totalBytes, report.reclaimableBytes, report.conversations.first?.bytes ?? 0)
/// ```
/// See <https://sqlite.org/dbstat.html>.
public struct StorageReport: Sendable {
  /// One table or index.
  public struct BTree: Sendable, Equatable {
    /// The table or index name.
    public var name: String
    /// The table it belongs to.
    public var table: String
    public var isIndex: Bool
    /// Bytes of pages it uses.
    public var bytes: Int64
    /// Of those, bytes no cell uses (`dbstat`'s `unused`).
    public var unusedBytes: Int64 = 0
    /// Cells on its pages.
    public var cells: Int64 = 0
    /// The page size of the file.
    public var pageSize: Int64 = 4096

    /// Whole pages a rebuild would save: the unused bytes less about one average cell a
    /// page, the slack even a freshly packed b-tree keeps (a cell that does not fit
    /// starts the next page, and large cells leave the most; measured against
    /// `VACUUM INTO` on generated histories).
    var reclaimablePages: Int64 {
      guard cells > 0, pageSize > 0 else { return 0 }
      let pages = bytes / pageSize
      let averageCell = Double(bytes - unusedBytes) / Double(cells)
      let slack = Double(pages) * averageCell
      return Int64(max(0, Double(unusedBytes) - slack) / Double(pageSize))
    }
  }

  /// One conversation (the other user).
  public struct ConversationUsage: Sendable, Equatable {
    public var id: Int64
    /// The contact's name, when the user is in the file.
    public var name: String?
    /// Acknowledged messages.
    public var messages: Int64
    /// Bytes of message text (UTF-8).
    public var contentBytes: Int64
    /// Its estimated share of the file: `(content + 110 bytes a row) × scale`, where
    /// the scale makes all conversations add up to the pages of `Messages` and its
    /// indexes (the same model as `EvictionPlanner`).
    public var bytes: Int64
    /// `created_at` of the oldest and newest message.
    public var oldest: String?
    public var newest: String?
    /// Outbox requests waiting to be sent or acknowledged (PENDING, SENT), and FAILED ones.
    public var pending: Int64
    public var failed: Int64
  }

  public var path: String
  /// The database file.
  public var fileBytes: Int64
  /// Its `-wal`: commits not yet checkpointed into the file.
  public var walBytes: Int64
  /// Its `-shm`, shown for completeness: the WAL index in shared memory, not data, and
  /// never counted in `totalBytes` (see `FileSystem.databaseSize`).
  public var shmBytes: Int64
  /// The data on disk: the file and its `-wal`.
  public var totalBytes: Int64 { fileBytes + walBytes }
  public var pageSize: Int64
  public var pageCount: Int64
  /// Free pages (reclaimable by `chatdb evict`'s reclaim step or VACUUM).
  public var freePages: Int64
  public var freeBytes: Int64 { freePages * pageSize }
  /// Bytes left unused inside the pages of tables and indexes (`dbstat`'s `unused`):
  /// room deletes opened up that only new rows of the same b-tree can fill.
  public var unusedBytes: Int64 { btrees.reduce(0) { $0 + $1.unusedBytes } }
  /// Fragmentation: free pages plus unused bytes inside pages.
  public var fragmentedBytes: Int64 { freeBytes + unusedBytes }
  /// What a `VACUUM` would give back, estimated: the free pages, and per table and
  /// index the whole pages its unused bytes add up to beyond the slack a rebuilt
  /// b-tree keeps (about one cell a page: cells do not split across pages).
  /// Unlike `freeBytes`, this counts the half-empty pages left by scattered deletes.
  public var reclaimableBytes: Int64 { freeBytes + btrees.reduce(0) { $0 + $1.reclaimablePages } * pageSize }
  /// `none`, `full` or `incremental`.
  public var autoVacuum: String
  /// Tables and indexes, largest first.
  public var btrees: [BTree]
  /// Pages in use that belong to no table or index: auto_vacuum's pointer-map pages.
  public var pointerMapBytes: Int64 { pageCount * pageSize - freeBytes - btrees.reduce(0) { $0 + $1.bytes } }
  /// Conversations, largest first.
  public var conversations: [ConversationUsage]
  /// Bytes of the search indexes' b-trees (migration 0005's FTS5 shadow tables), also
  /// listed in `btrees` as indexes of `Messages` and `MessageRequests`.
  public var searchIndexBytes: Int64 {
    btrees.filter { $0.isIndex && Self.searchIndexOwner(of: $0.name) != nil }.reduce(0) { $0 + $1.bytes }
  }

  /// Bytes of the edit history (`MessageEdits`: the versions edits replaced, migration 0008).
  public var editHistoryBytes: Int64 {
    btrees.filter { $0.name == "MessageEdits" }.reduce(0) { $0 + $1.bytes }
  }

  /// For a search index's shadow table (`MessageSearch_data`, `RequestSearch_idx`, …):
  /// the table the index is over, as an index; nil for any other name.
  static func searchIndexOwner(of name: String) -> (String, Bool)? {
    guard let underscore = name.firstIndex(of: "_") else { return nil }
    switch name[..<underscore] {
    case "MessageSearch", "MessageSearchCJK": return ("Messages", true)
    case "RequestSearch": return ("MessageRequests", true)
    default: return nil
    }
  }
  public var messages: Int64
  public var requests: Int64
  /// The media folder's files (nil before migration 0009).
  public var media: MediaUsage?

  /// Measures the file at `path` (read only; the file is never changed).
  public static func measure(path: String) throws -> StorageReport {
    do {
      guard FileSystem.exists(path) else { throw StoreError(.notFound, "\(path) does not exist", path: path) }
      // With no -wal, no connection is open: an empty -wal and the -shm seen while
      // measuring are the report's own connection's (removed when it closes), not the
      // file's. A writer that came meanwhile and wrote leaves a -wal that is not empty.
      let hadWAL = FileSystem.exists(path + "-wal")
      let db = try Database(path: path, mode: .readOnly)
      // Three passes at once, each on a connection and thread of its own: the b-trees'
      // pages (dbstat), and the older and the newer half of Messages by id. Read
      // transactions see the same snapshot when no other connection committed between
      // their starts: `data_version` on this connection is the same before and after
      // all of them (https://sqlite.org/pragma.html#pragma_data_version); otherwise the
      // report is measured again on this connection alone.
      let before = try db.int64("PRAGMA data_version")
      let (oldest, newest) = try db.read { db in
        try requireConversationKeys(db)
        // Two subqueries: SQLite reads min() or max() alone from the b-tree's end, but
        // both in one SELECT scan the whole table (a quarter of the report's work).
        return try db.prepare("SELECT (SELECT min(id) FROM Messages), (SELECT max(id) FROM Messages)")
          .first { ($0.int64(0), $0.int64(1)) } ?? (0, 0)
      }
      let split = oldest / 2 + newest / 2
      let pages = OnAnotherThread { try Database(path: path, mode: .readOnly).read { try Self.btrees($0) } }
      let newer = OnAnotherThread { try Database(path: path, mode: .readOnly).read { try Self.pass($0, after: split) } }
      var report = try db.read { try measure($0, btrees: nil, upTo: split, newer: newer.wait) }
      let measured = try pages.wait()
      if try db.int64("PRAGMA data_version") == before {
        report = report.with(btrees: measured)
      } else {
        report = try db.read { try measure($0, btrees: Self.btrees($0)) }
      }
      if !hadWAL && report.walBytes == 0 { report.shmBytes = 0 }
      report.media = try db.read { try MediaUsage.measure($0) }
      return report
    } catch {
      throw StoreError.from(error, path: path, doing: "measure", otherwise: .readFailed)
    }
  }

  /// The b-trees of the file with their bytes, unused bytes and cells, largest first.
  static func btrees(_ db: Database) throws -> [BTree] {
    let pageSize = try db.int64("PRAGMA page_size") ?? 4096
    var tables: [String: (String, Bool)] = [:]
    try db.prepare("SELECT name, tbl_name, type FROM sqlite_schema WHERE type IN ('table', 'index')").forEachRow {
      tables[$0.string(0)] = ($0.string(1), $0.string(2) == "index")
    }
    var btrees: [BTree] = []
    // Aggregate rows: one per b-tree, with its pages' bytes, unused bytes and cells summed.
    try db.prepare("SELECT name, pgsize, unused, ncell FROM dbstat WHERE aggregate = TRUE").forEachRow { row in
      let name = row.string(0)
      let (table, isIndex) = tables[name].map { Self.searchIndexOwner(of: name) ?? $0 } ?? (name, false)
      btrees.append(
        BTree(
          name: name, table: table, isIndex: isIndex, bytes: row.int64(1), unusedBytes: row.int64(2),
          cells: row.int64(3),
          pageSize: pageSize))
    }
    return btrees.sorted { ($0.bytes, $1.name) > ($1.bytes, $0.name) }
  }

  /// Measures the file in `db`'s transaction; with `btrees` nil, the b-trees are left
  /// empty (the caller measures them on another connection).
  static func measure(
    _ db: Database, btrees: [BTree]?, upTo split: Int64 = .max, newer: () throws -> Figures = { [:] }
  ) throws -> StorageReport {
    let path = db.path
    try requireConversationKeys(db)
    let pageSize = try db.int64("PRAGMA page_size") ?? 4096
    let pageCount = try db.int64("PRAGMA page_count") ?? 0
    let freePages = try db.int64("PRAGMA freelist_count") ?? 0
    let autoVacuum = ["none", "full", "incremental"][Int(min(max(try db.int64("PRAGMA auto_vacuum") ?? 0, 0), 2))]

    var stats = try pass(db, after: .min, upTo: split)
    for (conversation, later) in try newer() {
      if let earlier = stats[conversation] {
        stats[conversation] = ConversationFigures(
          messages: earlier.messages + later.messages, content: earlier.content + later.content, minID: earlier.minID,
          maxID: later.maxID)
      } else {
        stats[conversation] = later
      }
    }
    let totalMessages = stats.values.reduce(0) { $0 + $1.messages }
    var outbox: [Int64: (pending: Int64, failed: Int64)] = [:]
    var requests: Int64 = 0
    try db.prepare("SELECT to_user_id, status, count(*) FROM MessageRequests GROUP BY to_user_id, status").forEachRow {
      row in
      requests += row.int64(2)
      var counts = outbox[row.int64(0)] ?? (0, 0)
      switch row.string(1) {
      case "PENDING", "SENT": counts.pending += row.int64(2)
      case "FAILED": counts.failed += row.int64(2)
      default: break
      }
      outbox[row.int64(0)] = counts
    }

    let createdAt = try db.prepare(HotQuery.messageCreatedAt.sql)
    let userName = try db.prepare(HotQuery.userByID.sql)
    var conversations: [ConversationUsage] = []
    for id in Set(stats.keys).union(outbox.filter { $0.value.pending + $0.value.failed > 0 }.keys) {
      let s = stats[id]
      let o = outbox[id] ?? (0, 0)
      conversations.append(
        ConversationUsage(
          id: id, name: try userName.first([id]) { $0.optionalString(1) } ?? nil, messages: s?.messages ?? 0,
          contentBytes: s?.content ?? 0,
          bytes: 0,
          oldest: try s.flatMap { s in try createdAt.first([s.minID]) { $0.string(0) } },
          newest: try s.flatMap { s in try createdAt.first([s.maxID]) { $0.string(0) } },
          pending: o.pending, failed: o.failed))
    }
    let report = StorageReport(
      path: path, fileBytes: FileSystem.size(atPath: path) ?? 0, walBytes: FileSystem.size(atPath: path + "-wal") ?? 0,
      shmBytes: FileSystem.size(atPath: path + "-shm") ?? 0, pageSize: pageSize, pageCount: pageCount,
      freePages: freePages,
      autoVacuum: autoVacuum, btrees: [], conversations: conversations, messages: totalMessages, requests: requests)
    return btrees.map { report.with(btrees: $0) } ?? report
  }

  /// The report needs `Messages.conversation_id` (schema version 2 and later).
  static func requireConversationKeys(_ db: Database) throws {
    let columns = Set(try db.query("SELECT name FROM pragma_table_info('Messages')") { $0.string(0) })
    guard columns.contains("conversation_id") else {
      throw StoreError(
        .olderSchema, "\(db.path) has no conversation keys (schema version 1); run 'chatdb migrate' on it first",
        path: db.path)
    }
  }

  /// Per conversation: its messages, their content bytes, its oldest and newest id.
  typealias Figures = [Int64: ConversationFigures]
  struct ConversationFigures: Sendable {
    var messages: Int64
    var content: Int64
    var minID: Int64
    var maxID: Int64
  }

  /// One pass over the messages with ids in `after...upTo`, in id order (how the table
  /// lies on disk).
  static func pass(_ db: Database, after: Int64, upTo: Int64 = .max) throws -> Figures {
    var stats: Figures = [:]
    var run = (conversation: Int64(0), figures: ConversationFigures(messages: 0, content: 0, minID: 0, maxID: 0))
    // `after` = Int64.min means from the first row (`id > ?1` would leave out an id of Int64.min).
    let lower = after == .min ? "" : "id > ?1 AND "
    try db.prepare("SELECT conversation_id, id, length(CAST(content AS BLOB)) FROM Messages WHERE \(lower)id <= ?2")
      .forEachRow([after, upTo]) { row in
        let conversation = row.int64(0)
        let id = row.int64(1)
        // Messages come in sessions of one conversation: the run of the current one is
        // summed here and goes into the dictionary when another conversation's row comes
        // (a dictionary lookup a row was a fifth of the report's work).
        if conversation != run.conversation || run.figures.messages == 0 {
          close(run, into: &stats)
          run = (conversation, ConversationFigures(messages: 0, content: 0, minID: id, maxID: id))
        }
        run.figures.messages += 1
        run.figures.content += row.int64(2)
        run.figures.maxID = id
      }
    close(run, into: &stats)
    return stats
  }

  /// A run of one conversation's rows into its figures. Rows come in id order: the
  /// first row of a conversation is its oldest, the last its newest.
  private static func close(_ run: (conversation: Int64, figures: ConversationFigures), into stats: inout Figures) {
    guard run.figures.messages > 0 else { return }
    if var s = stats[run.conversation] {
      s.messages += run.figures.messages
      s.content += run.figures.content
      s.maxID = run.figures.maxID
      stats[run.conversation] = s
    } else {
      stats[run.conversation] = run.figures
    }
  }

  /// The report with `btrees` (from the same snapshot), each conversation's estimated
  /// bytes from them, and the conversations largest first.
  func with(btrees: [BTree]) -> StorageReport {
    var report = self
    report.btrees = btrees
    let messagePages = btrees.filter { $0.table == "Messages" }.reduce(0) { $0 + $1.bytes }
    let content = conversations.reduce(0) { $0 + $1.contentBytes }
    let model = Double(content + messages * EvictionPlanner.rowOverhead)
    let footprint = EvictionPlanner.Footprint(scale: model > 0 ? Double(messagePages) / model : 1, btreeBytes: [:])
    for i in report.conversations.indices where report.conversations[i].messages > 0 {
      let c = report.conversations[i]
      report.conversations[i].bytes = Int64(footprint.bytes(content: c.contentBytes, rows: c.messages).rounded())
    }
    report.conversations.sort { ($0.bytes, $1.id) > ($1.bytes, $0.id) }
    return report
  }
}

/// A concrete way to free space, with the bytes it would free, from the same planner
/// `chatdb evict --dry-run` uses.
public struct StorageSuggestion: Sendable, Equatable {
  /// The `chatdb evict` options, e.g. `["--older-than", "180d"]`.
  public var arguments: [String]
  /// Bytes the file (with its `-wal`) would shrink by.
  public var frees: Int64
  /// Messages it would delete.
  public var messages: Int64
  /// Whether it frees enough to bring the disk back to `ok`.
  public var enough: Bool

  /// Suggestions for the file at `path` on a disk that needs `needed` more bytes free
  /// to be `ok`: eviction by a few ages, and the size cap that frees what is needed.
  public static func suggest(path: String, needed: Int64, now: Date = Date()) throws -> [StorageSuggestion] {
    do {
      let db = try Database(path: path, mode: .readOnly)
      return try db.read { db in
        let planner = EvictionPlanner(database: db)
        let footprint = try planner.footprint()
        var result: [StorageSuggestion] = []
        func add(_ arguments: [String], _ policy: EvictionPolicy) throws {
          var policy = policy
          policy.now = now
          let plan = try planner.plan(policy, footprint: footprint)
          let frees = plan.fileBytes - (plan.expectedSize ?? plan.fileBytes)
          guard plan.messages > 0, frees > 0, !result.contains(where: { $0.frees == frees }) else { return }
          result.append(
            StorageSuggestion(arguments: arguments, frees: frees, messages: plan.messages, enough: frees >= needed))
        }
        for age in ["365d", "180d", "90d", "30d"] {
          var policy = EvictionPolicy()
          policy.olderThan = EvictionPolicy.age(age)
          try add(["--older-than", age], policy)
        }
        let used = FileSystem.databaseSize(atPath: path)
        let mebibyte: Int64 = 1 << 20
        let target = (used - needed) / mebibyte * mebibyte
        if needed > 0, target >= mebibyte {
          var policy = EvictionPolicy()
          policy.maxSize = target
          try add(["--max-size", "\(target / mebibyte)MiB"], policy)
        }
        return result
      }
    } catch {
      throw StoreError.from(error, path: path, doing: "plan suggestions for", otherwise: .readFailed)
    }
  }
}
