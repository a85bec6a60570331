import Foundation

/// Brings a chat database from any older version to the current one, safely.
///
/// Each migration runs in its own `IMMEDIATE` transaction and is checked with
/// `PRAGMA foreign_key_check` before commit; a failure rolls back that migration and
/// names it. Applied migrations are recorded in `chatdb_migrations` with a checksum,
/// and `PRAGMA user_version` always equals the newest one applied.
///
/// ```swift
/// let report = try Migrator().migrate(fileAt: "chats-1.db")
/// print(report.fromVersion, "→", report.toVersion)
/// ```
/// See <https://sqlite.org/lang_altertable.html#otheralter> and
/// <https://sqlite.org/pragma.html#pragma_user_version>.
public struct Migrator: Sendable {
  /// The migrations this migrator knows, in order.
  public var migrations: [Migration]
  /// How free disk space is measured before a file is changed.
  public var diskSpace: DiskSpaceProbe
  /// Called while migration 0005 builds a file's search index: rows done, rows in all.
  public var indexProgress: (@Sendable (Int64, Int64) -> Void)?

  /// The table that records applied migrations.
  public static let recordsTable = "chatdb_migrations"
  /// Room kept free beyond a migration's own estimate, in bytes.
  public static let freeSpaceMargin: Int64 = 8 << 20

  public init(migrations: [Migration] = Migration.shipped, diskSpace: @escaping DiskSpaceProbe = DiskSpace.of) {
    self.migrations = migrations
    self.diskSpace = diskSpace
  }

  /// The newest version this migrator knows.
  public var latestVersion: Int { migrations.last?.version ?? 0 }

  // MARK: - Status

  /// Reads the status of the file at `path` without changing it; a missing file is version 0.
  public func status(ofFileAt path: String) throws -> SchemaStatus {
    guard FileSystem.exists(path) else {
      return SchemaStatus(
        path: path, exists: false, version: 0, latestVersion: latestVersion, applied: [], pending: migrations,
        drift: [], isSeedFile: false, fileSize: 0)
    }
    do {
      let db = try Database(path: path, mode: .readOnly)
      return try db.read { try status(of: $0) }
    } catch {
      throw StoreError.from(error, path: path, doing: "read the schema of", otherwise: .readFailed)
    }
  }

  /// Reads the status of an open database.
  public func status(of db: Database) throws -> SchemaStatus {
    let userVersion = Int(try db.int64("PRAGMA user_version") ?? 0)
    let tables = Set(
      try db.query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'") { $0.string(0) })
    var applied: [AppliedMigration] = []
    if tables.contains(Self.recordsTable) {
      applied = try db.query("SELECT version, name, checksum, applied_at FROM \(Self.recordsTable) ORDER BY version") {
        AppliedMigration(version: $0.int(0), name: $0.string(1), checksum: $0.string(2), appliedAt: $0.string(3))
      }
    }
    if userVersion < 0 || applied.contains(where: { $0.version < 1 }) {
      throw StoreError(
        .schemaMismatch,
        "\(db.path): user_version \(userVersion) or a recorded migration number is out of range; not a chatdb file",
        path: db.path)
    }
    var version = userVersion
    var isSeedFile = false
    if userVersion == 0 && applied.isEmpty && !tables.isEmpty {
      try checkSeedSchema(db, tables: tables)
      version = 1
      isSeedFile = true
    } else if let last = applied.last, last.version != userVersion {
      throw StoreError(
        .schemaMismatch,
        "\(db.path): user_version is \(userVersion) but the last recorded migration is \(last.version); the file was changed outside chatdb",
        path: db.path)
    } else if applied.isEmpty && userVersion > 0 {
      throw StoreError(
        .schemaMismatch, "\(db.path): user_version is \(userVersion) but no migration is recorded; not a chatdb file",
        path: db.path)
    }
    var drift: [MigrationDrift] = []
    for record in applied where record.version <= latestVersion {
      let shipped = migrations[record.version - 1]
      if shipped.checksum != record.checksum || shipped.name != record.name {
        drift.append(
          MigrationDrift(
            version: record.version, recordedName: record.name, recordedChecksum: record.checksum,
            shippedName: shipped.name, shippedChecksum: shipped.checksum))
      }
    }
    return SchemaStatus(
      path: db.path, exists: true, version: version, latestVersion: latestVersion, applied: applied,
      pending: version < latestVersion ? Array(migrations[version...]) : [], drift: drift, isSeedFile: isSeedFile,
      fileSize: FileSystem.databaseSize(atPath: db.path))
  }

  /// A file with tables but no version is adopted as version 1 only if its schema is
  /// the seed's exactly: the same tables, each with the same columns (type, NOT NULL,
  /// default, primary key) and foreign keys, and no index, trigger or view of its own.
  ///
  /// Why this strict: adoption records 0001 as applied without running it, so every
  /// later migration, the chat layer and `chatdb check` take the seed's constraints as
  /// given. A `Messages` without its `INTEGER PRIMARY KEY` or a `NOT NULL` dropped
  /// would be carried forward silently, only to show up as `schema-different` in
  /// `check` (or as duplicate ids) after the migration had changed the file. Refusing
  /// leaves the file untouched for a person to look at; `check` compares tables with
  /// the same `tableShape(_:in:)`, so it is clean after a migration exactly when the
  /// file was adopted.
  private func checkSeedSchema(_ db: Database, tables: Set<String>) throws {
    guard let initial = migrations.first else { return }
    let reference = try Database(path: ":memory:")
    try reference.execute(initial.sql)
    let expectedTables = Set(try reference.query(Self.userTablesSQL) { $0.string(0) })
    var differences: [String] = []
    for table in expectedTables.sorted() {
      guard tables.contains(table) else {
        differences.append("missing table \(table)")
        continue
      }
      let want = try Self.tableShape(table, in: reference)
      let have = try Self.tableShape(table, in: db)
      guard want != have else { continue }
      let changes =
        want.filter { !have.contains($0) }.map { "missing \($0)" }
        + have.filter { !want.contains($0) }.map { "extra \($0)" }
      differences.append("table \(table): " + (changes.isEmpty ? "column order" : changes.joined(separator: ", ")))
    }
    differences += tables.subtracting(expectedTables).sorted().map { "extra table \($0)" }
    differences += try db.query(
      "SELECT type, name FROM sqlite_schema WHERE type IN ('index', 'trigger', 'view') AND sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY type, name"
    ) { "extra \($0.string(0)) \($0.string(1))" }
    guard differences.isEmpty else {
      let shown =
        differences.prefix(6).joined(separator: "; ")
        + (differences.count > 6 ? "; … (\(differences.count - 6) more)" : "")
      throw StoreError(
        .schemaMismatch,
        "\(db.path) has no chatdb version and its schema is not the seed's (\(shown)); refusing to adopt it",
        path: db.path)
    }
  }

  static let userTablesSQL = "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"

  /// A table's shape, as adoption and `chatdb check` compare it: each column as
  /// `name TYPE [NOT NULL] [DEFAULT x] [PK n]` in order, then each foreign key as
  /// `FOREIGN KEY (from) REFERENCES Table(to)`, sorted. Read from `pragma_table_info`
  /// and `pragma_foreign_key_list`, so the same table written two ways compares equal.
  ///
  /// See <https://sqlite.org/pragma.html#pragma_table_info>.
  public static func tableShape(_ table: String, in db: Database) throws -> [String] {
    let columns = try db.query(
      "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?) ORDER BY cid", [table]
    ) { row in
      var text = row.string(0) + " " + row.string(1).uppercased()
      if row.int(2) != 0 { text += " NOT NULL" }
      if let value = row.optionalString(3) { text += " DEFAULT " + value }
      if row.int(4) != 0 { text += " PK \(row.int(4))" }
      return text
    }
    let keys = try db.query(
      """
      SELECT group_concat("from", ', '), "table", group_concat(coalesce("to", ''), ', '), on_update, on_delete
      FROM (SELECT * FROM pragma_foreign_key_list(?) ORDER BY id, seq) GROUP BY id
      """, [table]
    ) { row in
      var text = "FOREIGN KEY (\(row.string(0))) REFERENCES \(row.string(1))(\(row.string(2)))"
      if row.string(3) != "NO ACTION" { text += " ON UPDATE " + row.string(3) }
      if row.string(4) != "NO ACTION" { text += " ON DELETE " + row.string(4) }
      return text
    }
    return columns + keys.sorted()
  }

  /// Throws unless `db` is at the latest version this binary knows: the chat layer,
  /// import and eviction work only on the current schema. `task` names who needs it.
  public static func requireLatest(_ db: Database, for task: String) throws {
    let latest = Migration.shipped.count
    let version = Int(try db.int64("PRAGMA user_version") ?? 0)
    guard version == latest else {
      throw StoreError(
        version > latest ? .newerSchema : .olderSchema,
        version > latest
          ? "\(db.path) is at schema version \(version), newer than this chatdb knows (\(latest)); use a newer chatdb"
          : "\(db.path) is at schema version \(version), \(task) needs \(latest); run 'chatdb migrate' on it first",
        path: db.path)
    }
  }

  // MARK: - Planning

  /// The migrations that bring a file at `status` to `target` (default: latest), or the
  /// reason it must not be touched: newer than this binary, drift, or a downgrade.
  public func plan(for status: SchemaStatus, to target: Int? = nil) throws -> [Migration] {
    let target = target ?? latestVersion
    if status.isNewer {
      throw StoreError(
        .newerSchema,
        "\(status.path) is at schema version \(status.version), newer than this chatdb knows (\(latestVersion)); use a newer chatdb",
        path: status.path)
    }
    if let first = status.drift.first {
      throw StoreError(
        .schemaMismatch, "\(status.path): \(first); refusing to migrate a drifted file", path: status.path)
    }
    guard target >= 0 && target <= latestVersion else {
      throw StoreError(
        .badTarget, "\(status.path): version \(target) is unknown; this chatdb knows versions 0 to \(latestVersion)",
        path: status.path)
    }
    if target < status.version {
      throw StoreError(
        .badTarget,
        "\(status.path) is at version \(status.version); downgrading to \(target) is not supported (restore a backup instead)",
        path: status.path)
    }
    return Array(migrations[status.version..<target])
  }

  // MARK: - Migrating

  /// What a migration run did.
  public struct Report: Sendable {
    public var path: String
    public var fromVersion: Int
    public var toVersion: Int
    public var applied: [Migration]
    /// The backup taken before the first change, if any.
    public var backupPath: String?
    /// Whether the file was created by this run.
    public var created: Bool
  }

  /// Creates the file (at `target`, default latest) when missing, or upgrades it.
  ///
  /// Before changing a file that holds tables it checks free space and, unless
  /// `backup` is false, writes a consistent copy to `<path>.bak-v<from>` (mode 0600).
  /// `owner` is the user whose file this is; when nil it is read from the file name
  /// (`chats-<id>.db`), the file's `StoreInfo`, or the messages themselves.
  public func migrate(fileAt path: String, to target: Int? = nil, owner: Int64? = nil, backup: Bool = true) throws
    -> Report
  {
    let existed = FileSystem.exists(path)
    let status = try self.status(ofFileAt: path)
    let plan = try self.plan(for: status, to: target)
    var report = Report(
      path: path, fromVersion: status.version, toVersion: status.version, applied: [], backupPath: nil, created: false)
    guard !plan.isEmpty else { return report }
    if existed && status.version > 0 {
      let buildsIndex = plan.contains(where: SearchIndexBuilder.builds)
      try checkFreeSpace(for: path, size: status.fileSize, backup: backup, searchIndex: buildsIndex)
    }
    if !existed {
      if let created = try create(path, plan: plan, owner: owner, report: report) { return created }
      // Another process (a `chat-sync send` beside a starting `chat-sync run`) created
      // the file first: it is the one to use, migrated as asked.
      return try migrate(fileAt: path, to: target, owner: owner, backup: backup)
    }
    do {
      let db = try Database(path: path, mode: existed ? .readWrite : .create)
      report.created = !existed

      try Self.takeSoleAccess(db)
      let owner = try owner ?? StoreLocation.userID(fromFileName: path) ?? Self.inferOwner(db)
      if existed && status.version > 0 && backup {
        let backupPath = "\(path).bak-v\(status.version)"
        try db.backup(to: backupPath)
        report.backupPath = backupPath
      }
      report.applied = try apply(plan, to: db, owner: owner, isSeedFile: status.isSeedFile)
      report.toVersion = report.applied.last?.version ?? status.version
      try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    } catch {
      throw StoreError.from(error, path: path, doing: "migrate")
    }
    return report
  }

  /// Waits (the connection's `busy_timeout`) until no other connection has the file
  /// open, then keeps it to itself until the connection closes; throws `.busy` naming
  /// the file when others still have it open after the wait.
  ///
  /// A migration rewrites tables, and a program that opened the file at the old version
  /// (an older `chat-sync`, an app) would go on writing to a schema it does not know. In
  /// WAL mode every open connection holds a shared lock on the database file for as
  /// long as it is open, and a connection in `locking_mode = EXCLUSIVE` takes (and
  /// keeps) an exclusive lock at its first write transaction: so that transaction
  /// starts only once every other connection has closed.
  /// See <https://sqlite.org/pragma.html#pragma_locking_mode> and
  /// <https://sqlite.org/wal.html#use_of_wal_without_shared_memory>.
  static func takeSoleAccess(_ db: Database) throws {
    try db.execute("PRAGMA locking_mode = EXCLUSIVE")
    do {
      try db.inTransaction(.immediate) { _ in .commit }
    } catch let error as SQLiteError where error.isBusy {
      throw StoreError(
        .busy,
        "\(db.path) is open in another program (a running chat-sync or app); migrating needs the file to itself: close it and try again",
        path: db.path)
    }
  }

  /// A new file is made whole beside its place (`.<name>.creating-<pid>-<n>`) and linked
  /// into place at the end: a run killed half-way never leaves a file between two
  /// versions (each migration commits on its own) where the next command would find it.
  /// Each call makes its own, so two creating the same file at once never write into
  /// one another's; the first link wins and the other returns nil (use the file there).
  /// Leftovers of killed runs (their process gone) are removed first.
  private func create(_ path: String, plan: [Migration], owner: Int64?, report: Report) throws -> Report? {
    var report = report
    let (folder, name) = FileSystem.splitPath(path)
    let prefix = ".\(name).creating"
    let temporary = FileSystem.joinPath(folder, "\(prefix)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where entry.hasPrefix(prefix) {
      // `.<name>.creating` (before per-process names) or `.<name>.creating-<pid>-<n>`.
      let parts = entry.dropFirst(prefix.count).split(separator: "-")
      let pid = parts.count == 2 && !entry.hasSuffix("-wal") && !entry.hasSuffix("-shm") ? Int32(parts[0]) : nil
      let gone = entry == prefix || (pid.map { kill($0, 0) != 0 && errno == ESRCH } ?? false)
      if gone { FileSystem.removeDatabase(atPath: FileSystem.joinPath(folder, entry)) }
    }
    FileSystem.removeDatabase(atPath: temporary)
    defer { FileSystem.removeDatabase(atPath: temporary) }
    do {
      do {
        let db = try Database(path: temporary, mode: .create)
        let owner = owner ?? StoreLocation.userID(fromFileName: path)
        report.applied = try apply(plan, to: db, owner: owner)
        report.toVersion = report.applied.last?.version ?? report.fromVersion
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
      }
      guard link(temporary, path) == 0 else {
        if errno == EEXIST { return nil }
        throw StoreError(.io, "cannot create \(path): \(String(cString: strerror(errno)))", path: path)
      }
      report.created = true
    } catch var error as StoreError {
      // Name the file the user asked for, not the temporary one.
      error.message = error.message.replacingOccurrences(of: temporary, with: path)
      throw error
    } catch {
      throw StoreError.from(error, path: path, doing: "create")
    }
    return report
  }

  /// Applies `plan` to an open database, one transaction per migration.
  public func apply(_ plan: [Migration], to db: Database, owner: Int64?, isSeedFile: Bool = false) throws -> [Migration]
  {
    try db.execute("CREATE TEMP TABLE IF NOT EXISTS migration_context (owner_user_id INTEGER)")
    try db.execute("DELETE FROM temp.migration_context")
    try db.execute("INSERT INTO temp.migration_context (owner_user_id) VALUES (?)", [owner])
    // Table rebuilds need foreign keys off (https://sqlite.org/lang_altertable.html);
    // each migration is checked with foreign_key_check before it commits instead.
    try db.execute("PRAGMA foreign_keys = OFF")
    defer { try? db.execute("PRAGMA foreign_keys = ON") }
    var applied: [Migration] = []
    for migration in plan {
      do {
        try db.inTransaction(.immediate) { db in
          let violationsBefore = try Self.foreignKeyViolations(db)
          if isSeedFile && applied.isEmpty && migration.version == 2 {
            try recordBaseline(db)
          }
          try db.execute(
            "CREATE TABLE IF NOT EXISTS \(Self.recordsTable) (version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL)"
          )
          try db.execute(migration.sql)
          if SearchIndexBuilder.builds(migration) {
            // The messages' search indexes, built in Swift (see the migration's header).
            try SearchIndexBuilder(database: db).build { indexProgress?($0, $1) }
          }
          let violationsAfter = try Self.foreignKeyViolations(db)
          if violationsAfter > violationsBefore {
            throw StoreError(
              .writeFailed,
              "\(violationsAfter - violationsBefore) new foreign key violation(s) (see PRAGMA foreign_key_check)")
          }
          try db.execute(
            "INSERT INTO \(Self.recordsTable) (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
            [migration.version, migration.name, migration.checksum, Self.timestamp()])
          try db.execute("PRAGMA user_version = \(migration.version)")
          return .commit
        }
      } catch let error as SQLiteError where error.isBusy || error.isCorruptOrNotADatabase || error.isDiskFull {
        throw StoreError.from(error, path: db.path, doing: "apply migration \(migration.fileName)")
      } catch {
        let reason = (error as? StoreError)?.message ?? String(describing: error)
        throw StoreError(
          .writeFailed, "\(db.path): migration \(migration.fileName) failed and was rolled back: \(reason)",
          path: db.path)
      }
      applied.append(migration)
    }
    return applied
  }

  /// A seed-era file already has version 1's tables: record 0001 as a baseline.
  private func recordBaseline(_ db: Database) throws {
    guard let initial = migrations.first else { return }
    try db.execute(
      "CREATE TABLE IF NOT EXISTS \(Self.recordsTable) (version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    try db.execute(
      "INSERT INTO \(Self.recordsTable) (version, name, checksum, applied_at) VALUES (?, ?, ?, 'baseline')",
      [initial.version, initial.name, initial.checksum])
  }

  static func foreignKeyViolations(_ db: Database) throws -> Int64 {
    try db.int64("SELECT count(*) FROM pragma_foreign_key_check") ?? 0
  }

  /// The owner of a file without a name or record that says so: the one user who is
  /// in every message; with a single conversation, the one who is not an outbox recipient.
  static func inferOwner(_ db: Database) throws -> Int64? {
    let tables = Set(try db.query("SELECT name FROM sqlite_schema WHERE type = 'table'") { $0.string(0) })
    if tables.contains("StoreInfo"), let owner = try db.int64("SELECT value FROM StoreInfo WHERE key = 'owner_user_id'")
    {
      return owner
    }
    guard tables.contains("Messages"),
      let (a, b) = try db.cachedStatement("SELECT from_user_id, to_user_id FROM Messages LIMIT 1").first(
        [], { ($0.int64(0), $0.int64(1)) })
    else { return nil }
    let inEvery = try [a, b].filter {
      try db.int64("SELECT NOT EXISTS (SELECT 1 FROM Messages WHERE from_user_id <> ?1 AND to_user_id <> ?1)", [$0])
        == 1
    }
    if inEvery.count == 1 { return inEvery[0] }
    let recipients = try inEvery.filter {
      try db.int64("SELECT EXISTS (SELECT 1 FROM MessageRequests WHERE to_user_id = ?)", [$0]) == 1
    }
    if recipients.count == 1 { return recipients[0] == a ? b : a }
    throw StoreError(
      .badInput,
      "\(db.path): cannot tell whose messages these are; name the file chats-<userId>.db or pass --user", path: db.path)
  }

  /// Room for the backup, the rewrite and, when migration 0005 is in the plan, the
  /// search index (measured at 0.7× the `Messages` table's pages: the file's size is
  /// an upper bound).
  private func checkFreeSpace(for path: String, size: Int64, backup: Bool, searchIndex: Bool) throws {
    let needed = size * (backup ? 2 : 1) + (searchIndex ? size : 0) + Self.freeSpaceMargin
    let what = (backup ? "a backup and the rewrite" : "the rewrite") + (searchIndex ? " and the search index" : "")
    try DiskSpace.require(needed, in: path, for: path, to: what, probe: diskSpace)
  }

  static func timestamp(_ date: Date = Date()) -> String {
    ISO8601DateFormatter().string(from: date)
  }
}
