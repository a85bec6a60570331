import CSQLite
import Foundation

/// One connection to one SQLite file, used from one thread at a time.
///
/// Every read-write file is opened in WAL mode with `foreign_keys=ON`,
/// `synchronous=NORMAL` and a `busy_timeout`, so `chatdb` and `chat-sync` can share it:
/// one writer at a time, readers never blocked.
///
/// ```swift
/// let db = try Database(path: "chats-1.db")
/// try db.inTransaction { db in
///   try db.execute("DELETE FROM Messages WHERE id < ?", [cutoff])
///   return .commit
/// }
/// ```
/// See <https://sqlite.org/wal.html> and <https://sqlite.org/pragma.html>.
public final class Database {
  /// How a file is opened.
  public enum Mode: Sendable {
    /// Read and write; the file must exist.
    case readWrite
    /// Read and write; the file is created (mode 0600) when missing.
    case create
    /// Read only: every write fails with `SQLITE_READONLY`, and the folder is left as it
    /// was found (no `-wal` or `-shm` stays behind once the connection closes).
    ///
    /// SQLite's read-only connections create a WAL file's `-wal` and `-shm` when missing
    /// and, unable to checkpoint, leave them behind (<https://sqlite.org/wal.html#readonly>).
    /// So when the file has no `-wal` (no connection is open on it) this mode opens it
    /// read-write with `PRAGMA query_only`: the last connection to close then removes
    /// the companions it made. When a `-wal` exists, a writer owns it and the file is
    /// opened `SQLITE_OPEN_READONLY`, using the writer's `-wal` and `-shm`.
    /// `query_only` also refuses temporary tables and `VACUUM INTO`: use `.readWrite`
    /// for those. See <https://sqlite.org/pragma.html#pragma_query_only>.
    case readOnly
  }

  /// The open connection.
  let handle: OpaquePointer
  /// The file's path, as given.
  public let path: String
  private var statementCache: [String: Statement] = [:]
  /// A read-write connection that found a `-wal` already there (a crashed writer's, or
  /// one that does not belong to this file at all): unless it writes, it closes without
  /// checkpointing, so a command that fails or only reads leaves the file and the `-wal`
  /// as they were. A writer that opens the file next checkpoints it as usual.
  private let foundWAL: Bool
  /// The WAL's length in frames after this connection's last commit, kept by a WAL hook
  /// once `countWALFrames()` was called.
  private var walFrameCount: UnsafeMutablePointer<Int32>?
  /// When statements stop (`interrupt(after:)`): a `CLOCK_MONOTONIC` time in
  /// nanoseconds, read by a progress handler.
  private var deadline: UnsafeMutablePointer<UInt64>?

  /// The file's device and inode while this connection is open (`othersHaveTheFileOpen`).
  private let identity: FileIdentity?

  /// How long a statement waits for another connection's lock before failing with
  /// `SQLITE_BUSY`, in milliseconds.
  public static let defaultBusyTimeout: Int32 = 5_000

  /// Opens `path`. `":memory:"` opens a private in-memory database.
  public init(path: String, mode: Mode = .readWrite, busyTimeout: Int32 = Database.defaultBusyTimeout) throws {
    var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
    switch mode {
    case .readOnly:
      let hasWAL = path != ":memory:" && FileSystem.exists(path + "-wal")
      flags |= hasWAL || path == ":memory:" ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
    case .readWrite: flags |= SQLITE_OPEN_READWRITE
    case .create:
      flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
      if path != ":memory:" { try FileSystem.createPrivateFile(atPath: path) }
    }
    let isNewFile = mode == .create && path != ":memory:" && FileSystem.size(atPath: path) == 0
    foundWAL = mode != .readOnly && path != ":memory:" && (FileSystem.size(atPath: path + "-wal") ?? 0) > 0
    var db: OpaquePointer?
    let rc = sqlite3_open_v2(path, &db, flags, nil)
    guard rc == SQLITE_OK, let db else {
      let message = db.map { String(cString: sqlite3_errmsg($0)) }
      sqlite3_close_v2(db)
      throw SQLiteError(code: rc, message: message)
    }
    self.handle = db
    self.path = path
    identity = path == ":memory:" ? nil : FileIdentity(path)
    if let identity { Self.openHere.withLock { $0[identity, default: 0] += 1 } }
    sqlite3_extended_result_codes(db, 1)
    sqlite3_busy_timeout(db, busyTimeout)
    // Before the first read: a read-only connection may hold a read-write handle (see
    // `Mode.readOnly`), and this is what keeps it from writing.
    if mode == .readOnly { try execute("PRAGMA query_only = ON") }
    // Reading the schema makes SQLite parse the header: a file that is not a database
    // or is damaged fails here, not at its first real use.
    try execute("SELECT count(*) FROM sqlite_schema")
    try execute("PRAGMA foreign_keys = ON")
    if isNewFile {
      // Only possible before the file's first page is written: lets eviction hand pages
      // back with `incremental_vacuum` instead of a full VACUUM.
      // See <https://sqlite.org/pragma.html#pragma_auto_vacuum>.
      try execute("PRAGMA auto_vacuum = INCREMENTAL")
    }
    // An empty file opened `.readWrite` is an empty database, not a chat file: switching
    // it to WAL would write its first page, changing a file the command then refuses
    // (version 0). It stays as it is until something really writes to it.
    let emptyExisting = mode == .readWrite && path != ":memory:" && FileSystem.size(atPath: path) == 0
    if mode != .readOnly && path != ":memory:" && !emptyExisting {
      try execute("PRAGMA journal_mode = WAL")
      // Debian builds SQLite with WAL synchronous=FULL; NORMAL is durable across
      // application crashes and only loses the last commits on power loss.
      try execute("PRAGMA synchronous = NORMAL")
    }
  }

  deinit {
    statementCache.removeAll()
    if foundWAL && sqlite3_total_changes64(handle) == 0 { _ = chatdb_sqlite3_no_checkpoint_on_close(handle) }
    sqlite3_close_v2(handle)
    if let identity { Self.openHere.withLock { $0[identity] = $0[identity] == 1 ? nil : $0[identity]! - 1 } }
    walFrameCount?.deallocate()
    deadline?.deallocate()
  }

  // MARK: - Deadlines

  /// Makes this connection's statements fail with `SQLITE_INTERRUPT` once `millis`
  /// milliseconds have passed from now (nil: never again). A write statement stopped
  /// inside a transaction rolls the whole transaction back (SQLite's rule): for a job
  /// that holds the write lock in short chunks and redoes a chunk, smaller, rather than
  /// hold it longer than it promised. Checked every `instructions` virtual machine
  /// instructions of each statement (1,000: a few microseconds); a `COMMIT` already
  /// writing is never stopped. The count starts again with each statement, and FTS5
  /// works through many short statements of its own (a `'merge'` step runs hundreds of
  /// them, each a few dozen instructions): stopping one of those takes a count of about 16.
  /// See <https://sqlite.org/c3ref/progress_handler.html>.
  public func interrupt(after millis: Double?, checkingEvery instructions: Int32 = 1_000) {
    guard let millis else {
      sqlite3_progress_handler(handle, 0, nil, nil)
      return
    }
    if deadline == nil { deadline = .allocate(capacity: 1) }
    deadline!.pointee = Self.monotonicNanoseconds() + UInt64(max(0, millis) * 1e6)
    sqlite3_progress_handler(
      handle, instructions,
      { context in
        guard let context else { return 0 }
        return Database.monotonicNanoseconds() >= context.assumingMemoryBound(to: UInt64.self).pointee ? 1 : 0
      }, deadline)
  }

  static func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
  }

  // MARK: - The WAL

  /// Starts counting the frames in the WAL at each commit (`walFrames`), with a
  /// `sqlite3_wal_hook`. The hook takes the place of SQLite's automatic checkpoints on
  /// this connection until `PRAGMA wal_autocheckpoint` sets them again: for a job that
  /// checkpoints by itself. See <https://sqlite.org/c3ref/wal_hook.html>.
  public func countWALFrames() {
    if walFrameCount == nil { walFrameCount = .allocate(capacity: 1) }
    walFrameCount!.pointee = 0
    sqlite3_wal_hook(
      handle,
      { context, _, _, frames in
        context?.assumingMemoryBound(to: Int32.self).pointee = frames
        return SQLITE_OK
      }, walFrameCount)
  }

  /// The WAL's length in frames (pages) after this connection's last commit: it grows
  /// with each commit and starts again from 0 after a checkpoint that copied it all.
  /// 0 before `countWALFrames()`.
  public var walFrames: Int { Int(walFrameCount?.pointee ?? 0) }

  // MARK: - Inserted rows

  /// Runs `body` and appends to `ids` the rowid of every row it inserted into `table`
  /// on this connection, in order: what `INSERT … RETURNING rowid` gives, without its
  /// cost. SQLite keeps the rows a `RETURNING` returns in a temporary table until the
  /// statement ends; an `sqlite3_update_hook` is a C call per row. A row an
  /// `OR IGNORE` skipped is not inserted and not listed. Triggers and foreign-key
  /// actions that insert into `table` count too. See
  /// <https://sqlite.org/c3ref/update_hook.html>.
  public func collectingInsertedRowIDs(
    into table: StaticString, _ ids: inout [Int64], _ body: () throws -> Void
  ) rethrows {
    struct Context {
      var table: UnsafePointer<CChar>
      var ids: UnsafeMutablePointer<[Int64]>
    }
    let name = UnsafeRawPointer(table.utf8Start).assumingMemoryBound(to: CChar.self)
    try withUnsafeMutablePointer(to: &ids) { ids in
      var context = Context(table: name, ids: ids)
      try withUnsafeMutablePointer(to: &context) { context in
        sqlite3_update_hook(
          handle,
          { context, operation, _, table, rowID in
            guard operation == SQLITE_INSERT, let table, let context = context?.assumingMemoryBound(to: Context.self),
              strcmp(table, context.pointee.table) == 0
            else { return }
            context.pointee.ids.pointee.append(rowID)
          }, context)
        defer { sqlite3_update_hook(handle, nil, nil) }
        try body()
      }
    }
  }

  // MARK: - Other connections

  /// A file, by device and inode (one file under any of its paths).
  struct FileIdentity: Hashable {
    let device: UInt64
    let inode: UInt64

    init?(_ path: String) {
      var info = stat()
      guard stat(path, &info) == 0 else { return nil }
      (device, inode) = (UInt64(info.st_dev), UInt64(info.st_ino))
    }
  }

  /// This process's open connections, per file.
  private static let openHere = Locked<[FileIdentity: Int]>([:])

  /// Whether a connection other than this one has the file open: another `Database` of
  /// this process, or any connection of another process. Each connection to a WAL file
  /// holds a shared lock on one byte of the `-shm` file, offset 128 (the "DMS" lock of
  /// SQLite's unix VFS, `UNIX_SHM_DMS` in os_unix.c; <https://sqlite.org/walformat.html>),
  /// for as long as it is open; Linux lists every process's locks in `/proc/locks`.
  /// Asking with `F_GETLK` would mean opening the `-shm`, and closing a descriptor drops
  /// every POSIX lock the process holds on that file, SQLite's own included. True when
  /// it cannot tell (no `/proc/locks`, no `-shm`).
  public func othersHaveTheFileOpen() -> Bool {
    guard let identity else { return false }
    if Self.openHere.withLock({ $0[identity] ?? 0 }) > 1 { return true }
    guard let shm = FileIdentity(path + "-shm"),
      let locks = try? String(contentsOfFile: "/proc/locks", encoding: .utf8)
    else { return true }
    // "1: POSIX  ADVISORY  READ 14169 fe:00:16606180 128 128": the process, the
    // device and inode, the first and last byte ("1: -> POSIX …" waits for a lock).
    // Matched by inode alone (an overlay file system's device numbers differ between
    // `stat` and the lock): a file elsewhere with the same inode only means a pause.
    let me = String(getpid())
    let inode = ":\(shm.inode)"
    for line in locks.split(separator: "\n") {
      let fields = line.split(separator: " ")
      guard fields.count >= 8, fields[1] != "->", fields[5].hasSuffix(inode), fields[6] == "128", fields[4] != me else {
        continue
      }
      return true
    }
    return false
  }

  // MARK: - Errors

  func error(_ rc: Int32, sql: String? = nil) -> SQLiteError {
    let extended = sqlite3_extended_errcode(handle)
    let message = String(cString: sqlite3_errmsg(handle))
    return SQLiteError(code: extended & 0xFF == rc & 0xFF ? extended : rc, message: message, sql: sql)
  }

  /// Throws the connection's error unless `rc` is `SQLITE_OK`.
  func check(_ rc: Int32, sql: String? = nil) throws {
    if rc != SQLITE_OK { throw error(rc, sql: sql) }
  }

  // MARK: - Statements

  /// Prepares a new statement.
  public func prepare(_ sql: String) throws -> Statement { try Statement(database: self, sql: sql) }

  /// Returns a prepared statement kept for the life of the connection (hot queries).
  public func cachedStatement(_ sql: String) throws -> Statement {
    if let statement = statementCache[sql] { return statement }
    let statement = try prepare(sql)
    statementCache[sql] = statement
    return statement
  }

  /// Runs one or more `;`-separated statements, binding `arguments` to the only one.
  public func execute(_ sql: String, _ arguments: [any DatabaseValueConvertible] = []) throws {
    if !arguments.isEmpty {
      try cachedStatement(sql).execute(arguments)
      return
    }
    try sql.withCString { start in
      var tail: UnsafePointer<CChar>? = start
      while let current = tail, current.pointee != 0 {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, current, -1, &stmt, &tail)
        let text = statementText(from: current, to: tail)
        guard rc == SQLITE_OK else {
          sqlite3_finalize(stmt)
          throw error(rc, sql: text)
        }
        guard let stmt else { continue }  // whitespace or a comment
        defer { sqlite3_finalize(stmt) }
        var step = sqlite3_step(stmt)
        while step == SQLITE_ROW { step = sqlite3_step(stmt) }
        if step != SQLITE_DONE { throw error(step, sql: text) }
      }
    }
  }

  private func statementText(from start: UnsafePointer<CChar>, to end: UnsafePointer<CChar>?) -> String {
    guard let end else { return String(cString: start) }
    let bytes = UnsafeRawBufferPointer(start: start, count: end - start)
    return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// Maps every row of a query.
  public func query<T>(_ sql: String, _ arguments: [any DatabaseValueConvertible] = [], _ transform: (Row) throws -> T)
    throws -> [T]
  {
    try cachedStatement(sql).map(arguments, transform)
  }

  /// The first column of the first row as an integer, or nil when there is no row or it is NULL.
  public func int64(_ sql: String, _ arguments: [any DatabaseValueConvertible] = []) throws -> Int64? {
    try cachedStatement(sql).first(arguments) { $0.optionalInt64(0) } ?? nil
  }

  /// The first column of the first row as text, or nil.
  public func string(_ sql: String, _ arguments: [any DatabaseValueConvertible] = []) throws -> String? {
    try cachedStatement(sql).first(arguments) { $0.optionalString(0) } ?? nil
  }

  /// Rows changed by the last INSERT, UPDATE or DELETE.
  public var changes: Int { Int(sqlite3_changes64(handle)) }
  /// The rowid of the last successful INSERT.
  public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
  /// Whether a transaction is open.
  public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

  /// Whether this connection runs the file's triggers (on by default).
  ///
  /// Only bulk jobs turn them off, for their own connection and for as long as they
  /// run, and then do in bulk what the triggers would have done row by row (see
  /// `ConversationSummaries`); every other connection, and any other program, still
  /// runs them. Changing it makes SQLite re-prepare this connection's statements.
  /// See <https://sqlite.org/c3ref/c_dbconfig_defensive.html#sqlitedbconfigenabletrigger>.
  public var triggersEnabled: Bool {
    var enabled: Int32 = 1
    _ = chatdb_sqlite3_enable_triggers(handle, -1, &enabled)
    return enabled != 0
  }

  /// Turns this connection's triggers on or off (see `triggersEnabled`).
  public func setTriggersEnabled(_ enabled: Bool) throws {
    var now: Int32 = 0
    try check(chatdb_sqlite3_enable_triggers(handle, enabled ? 1 : 0, &now))
    guard (now != 0) == enabled else {
      throw SQLiteError(code: SQLITE_ERROR, message: "SQLite did not turn triggers \(enabled ? "on" : "off")")
    }
  }

  // MARK: - Transactions

  /// How a transaction takes its locks. See <https://sqlite.org/lang_transaction.html>.
  public enum TransactionKind: String, Sendable {
    case deferred = "DEFERRED"
    case immediate = "IMMEDIATE"
    case exclusive = "EXCLUSIVE"
  }

  /// What a transaction's body decides.
  public enum TransactionCompletion: Sendable { case commit, rollback }

  /// Opens a transaction that spans calls (a bulk writer's batch); end it with
  /// `commit()` or `rollback()`. Prefer `inTransaction` when one closure holds it all.
  public func beginTransaction(_ kind: TransactionKind = .immediate) throws {
    try cachedStatement("BEGIN \(kind.rawValue) TRANSACTION").execute()
  }

  /// Commits the open transaction.
  public func commit() throws { try cachedStatement("COMMIT TRANSACTION").execute() }

  /// Rolls the open transaction back, if one is open; errors are ignored (a rollback
  /// follows another error, which wins).
  public func rollback() { rollbackIgnoringErrors() }

  /// Runs `body` in a transaction. A throw rolls back; the first error wins over one
  /// from the rollback.
  ///
  /// Writers use `.immediate` (the default) so a busy lock is met at `BEGIN`, where
  /// `busy_timeout` can wait, never half-way through.
  public func inTransaction(_ kind: TransactionKind = .immediate, _ body: (Database) throws -> TransactionCompletion)
    throws
  {
    try beginTransaction(kind)
    let completion: TransactionCompletion
    do {
      completion = try body(self)
    } catch {
      rollbackIgnoringErrors()
      throw error
    }
    switch completion {
    case .commit:
      do { try commit() } catch {
        rollbackIgnoringErrors()
        throw error
      }
    case .rollback:
      try execute("ROLLBACK TRANSACTION")
    }
  }

  /// One chunk of a long job that holds the write lock in short turns (`writeChunk`).
  public struct Chunk<Value> {
    /// What the body returned; nil when the deadline stopped it and it was rolled back.
    public var value: Value?
    /// Milliseconds spent waiting for the write lock (another writer held it).
    public var waitedMillis: Double
    /// Milliseconds the write lock was held, to the end of the commit or rollback.
    public var heldMillis: Double
  }

  /// Runs `body` in one `BEGIN IMMEDIATE … COMMIT` for a job that must not hold the
  /// write lock long (eviction, merges): with `stopAfter`, a body still running after
  /// that many milliseconds is stopped and rolled back (`interrupt(after:checkingEvery:)`)
  /// and the chunk comes back without a value, for the caller to redo smaller. Any other
  /// error rolls back and is thrown.
  public func writeChunk<Value>(
    stopAfter millis: Double?, checkingEvery instructions: Int32 = 1_000, _ body: (Database) throws -> Value
  ) throws -> Chunk<Value> {
    func elapsed(since start: UInt64) -> Double { Double(Self.monotonicNanoseconds() - start) / 1e6 }
    let asked = Self.monotonicNanoseconds()
    try beginTransaction(.immediate)
    let locked = Self.monotonicNanoseconds()
    let waited = Double(locked - asked) / 1e6
    let value: Value
    do {
      if let millis { interrupt(after: millis, checkingEvery: instructions) }
      defer { if millis != nil { interrupt(after: nil) } }
      value = try body(self)
    } catch {
      rollbackIgnoringErrors()
      if millis != nil, let error = error as? SQLiteError, error.code == SQLiteError.ResultCode.interrupt {
        return Chunk(value: nil, waitedMillis: waited, heldMillis: elapsed(since: locked))
      }
      throw error
    }
    do { try commit() } catch {
      rollbackIgnoringErrors()
      throw error
    }
    return Chunk(value: value, waitedMillis: waited, heldMillis: elapsed(since: locked))
  }

  /// Runs `body` in a transaction and returns its value; commits unless it throws.
  public func write<T>(_ body: (Database) throws -> T) throws -> T {
    var result: T?
    try inTransaction(.immediate) { db in
      result = try body(db)
      return .commit
    }
    return result!
  }

  /// Runs `body` in a read transaction: one consistent snapshot, whatever writers do.
  public func read<T>(_ body: (Database) throws -> T) throws -> T {
    var result: T?
    try inTransaction(.deferred) { db in
      result = try body(db)
      return .commit
    }
    return result!
  }

  /// Runs `body` inside a savepoint, which nests inside a transaction.
  /// See <https://sqlite.org/lang_savepoint.html>.
  public func inSavepoint(_ body: (Database) throws -> TransactionCompletion) throws {
    try savepoint { db in ((), try body(db)) }
  }

  /// Runs `body` inside a savepoint and returns its value: a throw undoes its writes
  /// only (the enclosing transaction stays open) and is rethrown.
  @discardableResult
  public func withSavepoint<T>(_ body: (Database) throws -> T) throws -> T {
    try savepoint { db in (try body(db), .commit) }
  }

  private func savepoint<T>(_ body: (Database) throws -> (T, TransactionCompletion)) throws -> T {
    try cachedStatement("SAVEPOINT chatdb_savepoint").execute()
    let value: T
    let completion: TransactionCompletion
    do {
      (value, completion) = try body(self)
    } catch {
      if isInTransaction { rollBackSavepoint() }
      throw error
    }
    if completion == .rollback {
      rollBackSavepoint()
    } else {
      try cachedStatement("RELEASE SAVEPOINT chatdb_savepoint").execute()
    }
    return value
  }

  private func rollBackSavepoint() {
    try? cachedStatement("ROLLBACK TO SAVEPOINT chatdb_savepoint").execute()
    try? cachedStatement("RELEASE SAVEPOINT chatdb_savepoint").execute()
  }

  private func rollbackIgnoringErrors() {
    if isInTransaction { _ = sqlite3_exec(handle, "ROLLBACK TRANSACTION", nil, nil, nil) }
  }

  // MARK: - Backup

  /// Copies the whole database into a new file at `destination` (mode 0600) with
  /// SQLite's online backup API: a consistent copy even while others write.
  /// See <https://sqlite.org/backup.html>.
  public func backup(to destination: String) throws {
    let temporary = destination + ".tmp-\(getpid())"
    try? FileManager.default.removeItem(atPath: temporary)
    do {
      try copy(into: temporary)
      try FileSystem.rename(temporary, to: destination)
    } catch {
      FileSystem.removeDatabase(atPath: temporary)
      throw error
    }
  }

  private func copy(into path: String) throws {
    do {
      let target = try Database(path: path, mode: .create)
      guard let backup = sqlite3_backup_init(target.handle, "main", handle, "main") else {
        throw target.error(sqlite3_errcode(target.handle))
      }
      var rc: Int32
      repeat {
        rc = sqlite3_backup_step(backup, -1)
        if rc == SQLITE_BUSY || rc == SQLITE_LOCKED { sqlite3_sleep(10) }
      } while rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED
      sqlite3_backup_finish(backup)
      guard rc == SQLITE_DONE else { throw target.error(rc) }
      // Fold the copy's WAL into the file so the backup is one self-contained file.
      try target.execute("PRAGMA journal_mode = DELETE")
    }
  }
}

@available(*, unavailable)
extension Database: Sendable {}
