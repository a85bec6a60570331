import ChatStore
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// How freed pages went back to the file system.
public enum ReclaimMethod: String, Sendable {
  /// `PRAGMA incremental_vacuum`, in short steps (files made with auto_vacuum=INCREMENTAL).
  case incrementalVacuum = "incremental_vacuum"
  /// One `VACUUM` (older files without auto_vacuum); it also switches the file to
  /// auto_vacuum=INCREMENTAL so the next eviction reclaims in short steps.
  case vacuum
  /// SQLite gave the pages back at commit (auto_vacuum=FULL).
  case automatic
  /// Nothing was freed, or there was no room for VACUUM's copy (see the note).
  case none
}

/// What an eviction did, with sizes measured on disk.
public struct EvictionResult: Sendable {
  /// The plan executed: the one `EvictionPlanner.plan(_:)` gives (what `--dry-run`
  /// shows), so `deletedMessages` is `plan.messages`.
  public var plan: EvictionPlan
  /// Messages deleted, in all and per conversation.
  public var deletedMessages: Int64
  public var deletedByConversation: [Int64: Int64]
  /// Write transactions (delete chunks and vacuum steps).
  public var chunks: Int
  /// The longest time one of them held the write lock, in milliseconds.
  public var maxChunkMillis: Double
  /// The time 99% of them stayed under, in milliseconds.
  public var p99ChunkMillis: Double
  /// How many held the lock longer than 50 ms.
  public var slowChunks: Int
  /// Chunks stopped after `Options.interruptAfterMillis`, rolled back and redone smaller
  /// (counted in `chunks` too).
  public var interruptedChunks: Int
  /// How long a `VACUUM` held the lock, when one was needed (milliseconds).
  public var vacuumMillis: Double?
  /// Database file and `-wal` before and after (each after a WAL checkpoint).
  public var sizeBefore: Int64
  public var sizeAfter: Int64
  /// The database file alone after eviction.
  public var fileSizeAfter: Int64
  /// Bytes really freed on disk.
  public var freedBytes: Int64 { sizeBefore - sizeAfter }
  public var reclaim: ReclaimMethod
  /// With a size target: whether the file got under it, and by how much it is under.
  public var targetReached: Bool?
  /// Planning and deleting passes: always 1, the plan is executed as planned (kept
  /// for the JSON output).
  public var passes: Int
  /// Versions of edited messages purged from the edit history (`editHistoryOlderThan`),
  /// besides those that went with their message.
  public var purgedEditVersions: Int64 = 0
  /// Media files removed (the media now `evicted`), and their bytes.
  public var evictedMedia = 0
  public var evictedMediaBytes: Int64 = 0
  /// Media rows deleted with their last message, and the bytes of their files.
  public var sweptMedia = 0
  public var sweptMediaBytes: Int64 = 0
  /// Why a target was missed, or why space was not reclaimed.
  public var note: String?
}

/// Executes eviction plans in short write transactions, then gives the freed pages
/// back to the file system and measures what was really freed.
///
/// Each chunk is its own `BEGIN IMMEDIATE … COMMIT` sized to hold the write lock about
/// `targetChunkMillis`, so `chat-sync` writing the same file waits at most about one
/// chunk; a run killed at any point leaves a consistent file, and running the same
/// policy again finishes the job. Its connection's triggers are off while it runs: each
/// chunk updates `ConversationSummaries` in its own transaction
/// (`ConversationSummaryUpkeep`) from what it deleted (`IDRangeDelete` for an age
/// cutoff, `DELETE … RETURNING` otherwise), at a fraction of the triggers' cost per row.
/// While another connection has the file open, the evictor pauses briefly between
/// chunks, and for longer (`politePauseMillis`, longer than the busy handler's gap
/// between two retries of a writer that has waited out one chunk) for two seconds after
/// it sees another connection write, so a waiting writer gets the lock at its next
/// retry; alone, it does not pause.
/// See <https://sqlite.org/lang_transaction.html> and
/// <https://sqlite.org/pragma.html#pragma_incremental_vacuum>.
public final class Evictor {
  /// Tuning, for tests and `--chunk-rows`.
  public struct Options: Sendable {
    /// Lock time a chunk aims at.
    public var targetChunkMillis: Double = 18
    /// Lock time after which a chunk's statements are stopped and the chunk rolled back
    /// and redone at half the size (`Database.interrupt(after:)`). A chunk now and then
    /// takes three to five times its aim (the machine, not the data), and a waiting writer
    /// should never wait 50 ms: 32 leaves room for the `COMMIT`, which cannot be stopped
    /// and takes up to 17 ms when the machine stalls. Chunks of fixed rows and the
    /// smallest ones are never stopped, so the job always moves on. Measurements:
    /// docs/decisions/0002-evict-chunks-aim-at-18-ms-and-stop-at-32.md.
    public var interruptAfterMillis: Double = 32
    /// Rows per chunk to start with, and the bounds of the adaptive size.
    public var initialChunkRows = 1_000
    public var maxChunkRows = 100_000
    /// A fixed number of rows per chunk instead of the adaptive size.
    public var fixedChunkRows: Int?
    /// Pause after a chunk while another connection is writing. SQLite's busy handler
    /// retries after 1, 3, 8, 18, 33, 53, 78 ms of waiting, then less often; a writer
    /// that began waiting during a chunk (at most 50 ms) retries at most 20 ms after the
    /// chunk ends, so 30 ms catches it, and one that waited longer (a rare long lock)
    /// lands in one of the next pauses. A longer pause only slows the eviction; a shorter
    /// one misses retries (docs/decisions/0002).
    public var politePauseMillis: Double = 30
    /// Where SQLite writes VACUUM's temporary copy (for the free-space check).
    public var temporaryDirectory: String?
    public init() {}
  }

  let db: Database
  let options: Options
  private var lastDataVersion: Int64 = 0
  private var lastContention: Double = -1e9
  private var chunks = 0
  /// The WAL's length in frames at the last passive checkpoint (`Database.walFrames`).
  private var framesAtCheckpoint = 0
  /// Frames the WAL grows by between passive checkpoints: half the file's pages, from
  /// 16,384 to 65,536 (64 to 256 MiB at 4 KiB a page). Consecutive transactions write
  /// many of the same pages again (the search indexes' structure, the input segments a
  /// merge step trims, the freelist and pointer maps, the index pages of conversations
  /// running across chunks), and a checkpoint copies each page once however often the
  /// WAL holds it, so fewer, larger checkpoints copy less (docs/decisions/0005).
  private var checkpointFrames = 16_384
  /// On a nearly full disk (a quarter of the free space under `checkpointFrames`
  /// pages), the most WAL to let grow: eviction is what a user runs on a full disk, and
  /// the WAL is what it needs room for (the pages it frees are reused, the file does
  /// not grow). Nil: a passive checkpoint every `checkpointFrames` (each syncs the file).
  private var walLimit: Int64?
  private var maxChunkMillis = 0.0
  /// How long each chunk held the lock, in milliseconds.
  private var chunkMillis: [Double] = []
  /// Chunks stopped and redone smaller (`Options.interruptAfterMillis`).
  private var interrupted = 0
  /// The search indexes (`mergeSearchIndexes`), and pages per merge step, scaled to the chunk time.
  private var searchIndexes: [String] = []
  private var mergePages = 64
  /// Delete chunks since the search indexes' last merge.
  private var chunksSinceMerge = 0

  public init(database: Database, options: Options = Options()) {
    self.db = database
    self.options = options
  }

  /// Plans and executes `policy`. `progress(deleted, planned)` is called after each chunk.
  public func run(_ policy: EvictionPolicy, progress: (Int64, Int64) -> Void = { _, _ in }) throws -> EvictionResult {
    do {
      return try execute(policy, progress: progress)
    } catch {
      throw StoreError.from(error, path: db.path, doing: "evict messages from")
    }
  }

  private func execute(_ policy: EvictionPolicy, progress: (Int64, Int64) -> Void) throws -> EvictionResult {
    var settings = ConnectionSettings(db)
    defer {
      try? db.execute("DROP TABLE IF EXISTS temp.chatdb_evict_bounds")
      try? settings.restore()
    }
    // Checkpoints run between chunks (`pause`), never inside a chunk's timing, when the
    // WAL has grown enough (counted at each commit: `restore` sets SQLite's own back).
    try settings.set("wal_autocheckpoint", 0)
    db.countWALFrames()
    // Each chunk keeps the conversation summaries itself, from what it deleted.
    try settings.disableTriggers()
    let summaries = try ConversationSummaryUpkeep(database: db)
    let search = try SearchIndexUpkeep(database: db)
    defer { search.close() }
    // Consecutive chunks touch many of the same pages (`checkpointFrames`): a larger
    // cache keeps them from being read back from the WAL.
    try settings.set("cache_size", -65_536)
    try checkpoint()
    let pageSize = try db.int64("PRAGMA page_size") ?? 4096
    checkpointFrames = Int(min(max((try db.int64("PRAGMA page_count") ?? 0) / 2, 16_384), 65_536))
    if let free = try? DiskSpace.of(db.path).available, free / 4 < Int64(checkpointFrames) * pageSize {
      walLimit = max(free / 4, 256 << 10)
    }
    let sizeBefore = FileSystem.databaseSize(atPath: db.path)
    lastDataVersion = try db.int64("PRAGMA data_version") ?? 0
    // The plan `chatdb evict --dry-run` shows (the same call on the same rows),
    // executed as planned: the dry run's counts are the run's counts. The run reports
    // counts only, so it skips the byte estimates (a dbstat pass and a scan of the
    // content, a fifth of the run) unless a size target needs them.
    let plan = try EvictionPlanner(database: db).plan(policy, estimateBytes: false)
    // The search indexes merge once, after the deletes (`SearchIndexUpkeep.Merging.deferred`).
    let merging = { (mode: SearchIndexUpkeep.Merging) in
      try self.db.inTransaction(.immediate) { _ in
        try search.setMerging(mode)
        return .commit
      }
    }
    searchIndexes = try SearchIndexUpkeep.messageIndexes(in: db)
    if plan.messages > 0 { try merging(.deferred) }
    let deleted: Int64
    do {
      deleted = try delete(plan, summaries: summaries, search: search) { progress($0, plan.messages) }
    } catch {
      if plan.messages > 0 { try? merging(.normal) }
      throw error
    }
    if plan.messages > 0 { try merging(.normal) }
    let purged = try purgeEditHistory(policy, settings: &settings)
    let media = try MediaEvictor(db: db, folder: MediaFolder(database: db.path)).run(plan.media)
    for millis in media.chunkMillis { record(millis) }
    var perConversation: [Int64: Int64] = [:]
    for part in plan.conversations { perConversation[part.id] = part.messages }
    var vacuumMillis: Double?
    var note: String?
    // The search indexes keep a deleted row's entries until their segments merge (and
    // the words of versions an edit replaced: merged too once their history is purged).
    if deleted > 0 || purged > 0 {
      if try db.int64("SELECT EXISTS (SELECT 1 FROM Messages)") == 0 {
        // Every message gone: each entry meets its deletion marker, so FTS5's merge would
        // read the whole index and write nothing, in one step no deadline can stop (its
        // budget counts pages written). Emptying the indexes takes one transaction: over
        // 50 ms on a large file, but the shortest way FTS5 has (docs/decisions/0002).
        _ = try inChunk(stoppable: false) {
          for table in searchIndexes { try SearchIndexUpkeep.deleteAll(db, table) }
          return 0
        }
      } else {
        try mergeDeletionMarkers(atEnd: true)
        for table in searchIndexes { try mergeSearchIndexes(table, anyLevel: true) }
      }
    }
    let reclaim = try reclaimSpace(vacuumMillis: &vacuumMillis, note: &note)

    try checkpoint()
    let sizeAfter = FileSystem.databaseSize(atPath: db.path)
    let fileSizeAfter = FileSystem.size(atPath: db.path) ?? 0
    var targetReached: Bool?
    if let target = policy.maxSize {
      let used = try usedBytes()
      targetReached = used <= target
      if used > target {
        note =
          plan.note ?? note
          ?? "the file is \(used) bytes, \(used - target) over the target of \(target) bytes: the plan's estimate was short "
          + "(deleted rows leave partly filled pages); running the same command again plans from the measured size"
      }
    }
    return EvictionResult(
      plan: plan, deletedMessages: deleted, deletedByConversation: perConversation, chunks: chunks,
      maxChunkMillis: maxChunkMillis, p99ChunkMillis: percentile99(), slowChunks: chunkMillis.filter { $0 > 50 }.count,
      interruptedChunks: interrupted,
      vacuumMillis: vacuumMillis, sizeBefore: sizeBefore, sizeAfter: sizeAfter,
      fileSizeAfter: fileSizeAfter, reclaim: reclaim, targetReached: targetReached, passes: 1,
      purgedEditVersions: purged, evictedMedia: media.evicted, evictedMediaBytes: media.evictedBytes,
      sweptMedia: media.swept, sweptMediaBytes: media.sweptBytes, note: note)
  }

  // MARK: - Deleting in chunks

  /// Deletes what `plan` lists in short transactions; returns the rows deleted.
  private func delete(
    _ plan: EvictionPlan, summaries: ConversationSummaryUpkeep, search: SearchIndexUpkeep, progress: (Int64) -> Void
  ) throws -> Int64 {
    guard plan.messages > 0 else { return 0 }
    var deleted: Int64 = 0
    var rows = options.fixedChunkRows ?? options.initialChunkRows
    if plan.conversations.count <= 8 {
      // A few conversations: walk each one's index range, oldest first.
      let chunk = try db.prepare(HotQuery.deleteConversationChunk.sql)
      for part in plan.conversations {
        while true {
          let (changed, millis) = try inChunks(size: &rows, smallest: Self.smallestChunkRows) { rows in
            try Self.delete(chunk, [part.id, part.lastID, Int64(rows)], summaries: summaries, search: search, in: db)
          }
          deleted += Int64(changed)
          progress(deleted)
          rows = nextChunkRows(rows, millis: millis)
          if changed == 0 { break }
          try mergeDeletionMarkers()
        }
      }
      return deleted
    }
    // Many conversations: walk the table in id order (how the rows lie on disk), each
    // chunk a range of ids, deleting the rows the plan covers.
    try db.execute(HotQuery.evictionBoundsTable)
    try db.execute("DELETE FROM temp.chatdb_evict_bounds")
    let insert = try db.prepare("INSERT INTO temp.chatdb_evict_bounds (conversation_id, last_id) VALUES (?, ?)")
    for part in plan.conversations { try insert.execute([part.id, part.lastID]) }
    let maxID = plan.uniformLastID ?? plan.conversations.map(\.lastID).max()!
    let next = try db.prepare(HotQuery.chunkEnd.sql)
    let chunk = try db.prepare(HotQuery.deleteBoundedRange.sql)
    let range = plan.uniformLastID == nil ? nil : try IDRangeDelete(db)
    var low = (try db.int64(HotQuery.oldestMessage.sql) ?? 0) - 1
    while low < maxID {
      var high = maxID
      let (changed, millis) = try inChunks(size: &rows, smallest: Self.smallestChunkRows) { rows in
        high = try next.first([low, maxID, Int64(rows - 1)]) { $0.int64(0) } ?? maxID
        if let range { return try range.delete(low, high, summaries: summaries, search: search) }
        return try Self.delete(chunk, [low, high], summaries: summaries, search: search, in: db)
      }
      deleted += Int64(changed)
      progress(deleted)
      rows = nextChunkRows(rows, millis: millis)
      low = high
      if changed > 0 { try mergeDeletionMarkers() }
    }
    return deleted
  }

  /// Runs one of the catalog's `DELETE … RETURNING conversation_id, id, unread` and
  /// notes each deleted row for the conversation summaries and the search indexes, which
  /// it then updates (in
  /// the chunk's transaction); returns the rows deleted.
  static func delete(
    _ statement: Statement, _ arguments: [Int64], summaries: ConversationSummaryUpkeep, search: SearchIndexUpkeep,
    in db: Database
  ) throws -> Int {
    var deleted = 0
    var texts: [(id: Int64, content: String)] = []
    do {
      try statement.forEachRow(arguments) { row in
        deleted += 1
        summaries.deleted(conversation: row.int64(0), id: row.int64(1), unread: row.int64(2) != 0)
        texts.append((row.int64(1), row.string(3)))
      }
      try summaries.apply()
      for row in texts { try search.deletedMessage(id: row.id, content: row.content) }
      try search.flush()
      // Their edit history and attachments go with them (the triggers that do it are off here).
      let edits = try db.cachedStatement(HotQuery.deleteEditHistory.sql)
      let attachments = try db.cachedStatement(HotQuery.deleteMessageAttachments.sql)
      for row in texts {
        try edits.execute([row.id])
        try attachments.execute([row.id])
      }
    } catch {
      summaries.discard()
      search.discard()
      throw error
    }
    return deleted
  }

  /// Deletes every message of an id range (a plan with one bound for all: an age
  /// cutoff) without `RETURNING`: what the summaries need comes from two index walks
  /// first, the unread messages in the range and the conversations whose newest
  /// message is in it, and the search indexes drop the range's entries set-wise.
  struct IDRangeDelete {
    let db: Database
    let unread: Statement
    let newest: Statement
    let delete: Statement

    init(_ db: Database) throws {
      self.db = db
      // A file without the unread index (dropped by hand or by `chatdb index`) is read
      // by a walk of the chunk's id range: the same rows, where `INDEXED BY` would fail.
      let indexed =
        try db.int64("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'Messages_unread'") == 1
      let sql = HotQuery.unreadInIDRange.sql
      unread = try db.prepare(indexed ? sql : sql.replacingOccurrences(of: " INDEXED BY Messages_unread", with: ""))
      newest = try db.prepare(HotQuery.summariesWithNewestInIDRange.sql)
      delete = try db.prepare(HotQuery.deleteIDRange.sql)
    }

    func delete(_ low: Int64, _ high: Int64, summaries: ConversationSummaryUpkeep, search: SearchIndexUpkeep) throws
      -> Int
    {
      do {
        try unread.forEachRow([low, high]) { summaries.deletedUnread(conversation: $0.int64(0), count: $0.int64(1)) }
        try newest.forEachRow([low, high]) { summaries.changed(conversation: $0.int64(0)) }
        try search.deletingMessages(after: low, upTo: high)
        try delete.execute([low, high])
        let deleted = db.changes
        try summaries.apply()
        try search.flush()
        try db.cachedStatement(HotQuery.deleteEditHistoryInIDRange.sql).execute([low, high])
        try db.cachedStatement(HotQuery.deleteAttachmentsInIDRange.sql).execute([low, high])
        return deleted
      } catch {
        summaries.discard()
        search.discard()
        throw error
      }
    }
  }

  /// Rows of the smallest delete chunk (never stopped).
  static let smallestChunkRows = 100

  /// Runs `body(size)` as one chunk (`inChunk`); when the chunk is stopped at its
  /// deadline, halves `size`, down to `smallest` (never stopped), and runs it again.
  /// Returns what the chunk that finished returned; `size` is then the size it ran at.
  private func inChunks(
    size: inout Int, smallest: Int, checkingEvery: Int32 = 100, _ body: (Int) throws -> Int
  ) throws -> (Int, Double) {
    while true {
      let current = size
      if let done = try inChunk(stoppable: current > smallest, checkingEvery: checkingEvery, { try body(current) }) {
        return done
      }
      size = max(current / 2, smallest)
    }
  }

  /// Runs `body` in one `BEGIN IMMEDIATE … COMMIT`; `body` returns the rows it changed.
  /// Returns them and the milliseconds the write lock was held, then pauses for other
  /// writers. When `stoppable`, a chunk still running after `interruptAfterMillis` is
  /// stopped and rolled back, and nil returned: the caller redoes it smaller. The
  /// deadline is checked every `checkingEvery` instructions of each statement
  /// (`Database.interrupt(after:checkingEvery:)`): 16 for FTS5's merges and
  /// `incremental_vacuum`, whose work is many short statements or one short loop; 100
  /// for the deletes, whose FTS5 `'delete'` statements spend microseconds per
  /// instruction (each row's text is tokenized in one), so checking every 1,000 would
  /// let a stopped chunk run well past its deadline; checking every 100 costs nothing
  /// measurable (docs/decisions/0002).
  private func inChunk(stoppable: Bool = true, checkingEvery: Int32 = 100, _ body: () throws -> Int) throws -> (
    Int, Double
  )? {
    let stop = stoppable && options.fixedChunkRows == nil
    let chunk = try db.writeChunk(stopAfter: stop ? options.interruptAfterMillis : nil, checkingEvery: checkingEvery) {
      _ in try body()
    }
    if chunk.waitedMillis > 5 { lastContention = Self.now() - chunk.heldMillis }
    record(chunk.heldMillis)
    if chunk.value == nil { interrupted += 1 }
    try pause(after: chunk.heldMillis)
    return chunk.value.map { ($0, chunk.heldMillis) }
  }

  private func record(_ millis: Double) {
    chunks += 1
    maxChunkMillis = max(maxChunkMillis, millis)
    chunkMillis.append(millis)
  }

  /// The chunk time 99% of the chunks stayed under (nearest rank).
  private func percentile99() -> Double {
    guard !chunkMillis.isEmpty else { return 0 }
    let sorted = chunkMillis.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
  }

  /// Gives the lock away for a moment: briefly (a sixteenth of the chunk, with jitter so a
  /// writer's retries never lock into step with the chunks), or for longer
  /// (`politePauseMillis`) while another connection is writing; not at
  /// all while no other connection has the file open (`Database.othersHaveTheFileOpen`):
  /// a writer has to open the file before it can wait for the lock, and the next
  /// chunk's pause sees it.
  private func pause(after millis: Double) throws {
    let version = try db.int64("PRAGMA data_version") ?? 0
    let now = Self.now()
    if version != lastDataVersion {
      lastDataVersion = version
      lastContention = now
    }
    let pause =
      now - lastContention < 2_000 ? options.politePauseMillis : max(0.5, millis / 16 * Double.random(in: 0.5...1.5))
    // A passive checkpoint copies the WAL into the file without taking the write lock,
    // so it runs in the pause (and keeps the WAL from growing without bound).
    if let limit = walLimit {
      // A passive checkpoint leaves the WAL file its size; this one empties it, and
      // holds other writers off while it copies (at most `limit` bytes): timed as a chunk.
      if (FileSystem.size(atPath: db.path + "-wal") ?? 0) >= limit {
        let start = Self.now()
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        record(Self.now() - start)
      }
    } else {
      // A WAL shorter than at the last checkpoint started again from its beginning.
      if db.walFrames < framesAtCheckpoint { framesAtCheckpoint = 0 }
      if db.walFrames - framesAtCheckpoint >= checkpointFrames {
        try db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        framesAtCheckpoint = db.walFrames
      }
    }
    let left = pause - (Self.now() - now)
    if left > 0 && db.othersHaveTheFileOpen() { usleep(useconds_t(left * 1000)) }
  }

  private func nextChunkRows(_ rows: Int, millis: Double) -> Int {
    options.fixedChunkRows
      ?? Self.scaled(rows, took: millis, aiming: options.targetChunkMillis, within: 100...options.maxChunkRows)
  }

  /// The next size of a chunk of `size` that took `millis`, for one that takes `target`
  /// ms: at most half as large again, at least half as large, and within `bounds`.
  static func scaled(_ size: Int, took millis: Double, aiming target: Double, within bounds: ClosedRange<Int>) -> Int {
    let scaled = Double(size) * target / max(millis, 0.5)
    return Int(
      min(max(scaled, Double(size) / 2, Double(bounds.lowerBound)), Double(size) * 1.5, Double(bounds.upperBound)))
  }

  // MARK: - Reclaiming

  /// Level-0 segments of deletion markers `mergeDeletionMarkers` lets pile up.
  static let markerSegments = 64

  /// Each delete chunk leaves a small segment of deletion markers on level 0 of each
  /// search index. They are merged among themselves, `markerSegments` at a time (and
  /// what is left at the end, when at least `usermerge`), in steps timed like the
  /// deletes, only while FTS5's next merge step takes level 0: the merged markers go
  /// to level 1, and the large old segments that import and generate leave there are
  /// merged once, at the end. Merging whatever FTS5 picks every 16 chunks rewrote those
  /// old segments mid-run as well, as soon as level 1 held 16 segments; letting level 0
  /// grow without bound instead slows the final merge, whose every step trims each
  /// input segment (docs/decisions/0005).
  /// When the structure cannot be read (`SearchIndexUpkeep.levels`), or level 0 nears
  /// `crisismerge` (128), FTS5 merges whatever it picks, every 16 chunks.
  private func mergeDeletionMarkers(atEnd: Bool = false) throws {
    chunksSinceMerge += 1
    defer { if chunksSinceMerge >= 16 { chunksSinceMerge = 0 } }
    for table in searchIndexes {
      guard let levels = try SearchIndexUpkeep.levels(db, table), levels.first.map({ $0.segments < 96 }) ?? true else {
        if chunksSinceMerge >= 16 || atEnd { try mergeSearchIndexes(table, anyLevel: false) }
        continue
      }
      let enough = atEnd ? 16 : Self.markerSegments
      guard levels.first.map({ $0.merging > 0 || $0.segments >= enough }) ?? false else { continue }
      try mergeSearchIndexes(table, anyLevel: false) {
        guard let levels = try SearchIndexUpkeep.levels(db, table), let zero = levels.first else { return false }
        return SearchIndexUpkeep.nextMergeLevel(levels, usermerge: 16) == 0
          && (zero.merging > 0 || zero.segments >= enough)
      }
    }
  }

  /// Merges `table`'s segments in steps timed like the delete chunks, while `more()`:
  /// during the deletes, the deletion markers (`mergeDeletionMarkers`); at the end
  /// (`anyLevel`), everything, until the deleted rows' entries are gone and their pages
  /// free to give back.
  private func mergeSearchIndexes(_ table: String, anyLevel: Bool, while more: () throws -> Bool = { true }) throws {
    while try more() {
      var pages = mergePages
      let (work, millis) = try inChunks(size: &pages, smallest: 16, checkingEvery: 16) { pages in
        Int(try SearchIndexUpkeep.mergeStep(db, table, pages: pages, anyLevel: anyLevel))
      }
      mergePages = pages
      if work < 2 { break }
      // Four fifths of the delete chunks' time: a step's time varies more (FTS5 counts
      // the pages it writes, and entries that cancel out are read but never written),
      // but every step also reads and trims each of its input segments again, so fewer,
      // larger steps merge faster, up to where they start missing the deadline
      // (docs/decisions/0002).
      mergePages = Self.scaled(pages, took: millis, aiming: options.targetChunkMillis * 0.8, within: 16...Int.max)
    }
  }

  private func reclaimSpace(vacuumMillis: inout Double?, note: inout String?) throws -> ReclaimMethod {
    let free = try db.int64("PRAGMA freelist_count") ?? 0
    guard free > 0 else { return .none }
    switch try db.int64("PRAGMA auto_vacuum") ?? 0 {
    case 2:  // auto_vacuum = INCREMENTAL (https://sqlite.org/pragma.html#pragma_auto_vacuum)
      var pages = 256
      while try (db.int64("PRAGMA freelist_count") ?? 0) > 0 {
        let (_, millis) = try inChunks(size: &pages, smallest: 64, checkingEvery: 16) { pages in
          try db.execute("PRAGMA incremental_vacuum(\(pages))")
          return 0
        }
        // Half the delete chunks' time: half of a step's lock is its commit, which the
        // deadline cannot stop.
        if options.fixedChunkRows == nil {
          pages = Self.scaled(pages, took: millis, aiming: options.targetChunkMillis / 2, within: 64...Int.max)
        }
      }
      return .incrementalVacuum
    case 1:  // auto_vacuum = FULL: SQLite gave the pages back at each commit
      return .automatic
    default:
      // VACUUM writes a full copy to the temporary folder and, in WAL mode, the whole
      // file again into the WAL: both need room for it (twice the room when they share
      // a file system).
      let pageSize = try db.int64("PRAGMA page_size") ?? 4096
      let copy = ((try db.int64("PRAGMA page_count") ?? 0) - free) * pageSize
      let temporary = options.temporaryDirectory ?? FileSystem.sqliteTemporaryDirectory()
      let folder = FileSystem.parentFolder(of: db.path)
      let needed = copy * (FileSystem.onSameFileSystem(folder, temporary) ? 2 : 1) + (16 << 20)
      for place in [folder, temporary] {
        let space = try DiskSpace.of(place)
        if space.available < needed {
          note =
            "\(free * pageSize) bytes of free pages stay in the file: VACUUM needs about \(needed) bytes free in \(place), "
            + "only \(space.available) available"
          return .none
        }
      }
      let started = Self.now()
      try db.execute("PRAGMA auto_vacuum = INCREMENTAL")
      try db.execute("VACUUM")
      let millis = Self.now() - started
      vacuumMillis = (vacuumMillis ?? 0) + millis
      return .vacuum
    }
  }

  /// SQLite's choice of temporary folder on Unix.
  private func usedBytes() throws -> Int64 {
    let pageSize = try db.int64("PRAGMA page_size") ?? 4096
    return ((try db.int64("PRAGMA page_count") ?? 0) - (try db.int64("PRAGMA freelist_count") ?? 0)) * pageSize
  }

  /// Deletes the edit history older than the policy's cutoff, 1,000 versions a short
  /// transaction (oldest first, by `MessageEdits_by_time`), with `secure_delete` on: the
  /// text of a version replaced by an edit is not left in the file's free bytes (the final
  /// checkpoint truncates the WAL).
  private func purgeEditHistory(_ policy: EvictionPolicy, settings: inout ConnectionSettings) throws -> Int64 {
    guard let cutoff = policy.editHistoryCutoff else { return 0 }
    try settings.set("secure_delete", 1)
    let delete = try db.prepare(
      """
      DELETE FROM MessageEdits WHERE (message_id, version) IN (
        SELECT message_id, version FROM MessageEdits WHERE edited_at < ?1 ORDER BY edited_at LIMIT 1000)
      """)
    var purged: Int64 = 0
    while true {
      let changed =
        try inChunk(stoppable: false) {
          try delete.execute([cutoff])
          return Int(db.changes)
        }?.0 ?? 0
      purged += Int64(changed)
      if changed < 1000 { return purged }
    }
  }

  /// Copies the WAL into the file without holding the write lock, then truncates it
  /// (a short wait for the lock: little is left to copy).
  private func checkpoint() throws {
    try db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
  }

  static func now() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) * 1000 + Double(spec.tv_nsec) / 1e6
  }
}

@available(*, unavailable)
extension Evictor: Sendable {}
