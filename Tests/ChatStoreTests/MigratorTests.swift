import Foundation
import TestSupport
import Testing

@testable import ChatStore

@Suite(.ownThreads) struct MigratorTests {
  static let latest = Fixture.latest
  static let owner: Int64 = 7

  // MARK: - Reading leaves no trace

  @Test("Status and a migrate with nothing to do leave the folder as they found it", arguments: [Fixture.latest, 1])
  func readingLeavesTheFolderAlone(_ version: Int) throws {
    try withTemporaryDirectory { dir in
      let path = try Fixture.makeFile(at: version, in: dir, owner: Self.owner)
      if version < Self.latest { _ = try Migrator().migrate(fileAt: path, backup: false) }
      let before = try fileNames(in: dir)
      #expect(before == [(path as NSString).lastPathComponent])
      let status = try Migrator().status(ofFileAt: path)
      #expect(status.isCurrent)
      #expect(status.fileSize == FileSystem.size(atPath: path))
      #expect(try fileNames(in: dir) == before)
      let report = try Migrator().migrate(fileAt: path)
      #expect(report.applied.isEmpty)
      #expect(try fileNames(in: dir) == before)
    }
  }

  // MARK: - Every version to the latest

  @Test(
    "Every shipped version migrates to the latest: no row lost, same schema as a fresh file",
    arguments: Array(0...Fixture.latest))
  func migratesFrom(_ version: Int) throws {
    try withTemporaryDirectory { dir in
      let latest = Self.latest
      let path = try Fixture.makeFile(at: version, in: dir, owner: Self.owner)
      let before = version > 0 ? try Fixture.snapshot(ofFileAt: path) : [:]
      if version > 0 {
        #expect(try Fixture.userVersion(ofFileAt: path) == version)
        #expect(!before.isEmpty)
        #expect(
          before.filter { !Fixture.workTables.contains($0.key) }.values.allSatisfy { !$0.rows.isEmpty },
          "the fixture fills every table (the summaries through their triggers)")
      } else {
        #expect(!FileSystem.exists(path))
      }

      let report = try Migrator().migrate(fileAt: path)
      #expect(report.fromVersion == version)
      #expect(report.toVersion == latest)
      #expect(report.applied == Array(Migration.shipped.dropFirst(version)))
      #expect(report.created == (version == 0))
      #expect(report.path == path)

      // (a) The file is at the latest version, with every migration recorded.
      #expect(try Fixture.userVersion(ofFileAt: path) == latest)
      #expect(try Fixture.recordedVersions(ofFileAt: path) == Array(1...latest))
      let status = try Migrator().status(ofFileAt: path)
      #expect(status.isCurrent)
      #expect(status.pending.isEmpty)
      #expect(status.drift.isEmpty)

      // (b) No row lost; the original columns hold the same values. Only the
      // key-value StoreInfo may gain rows (migrations record facts there).
      let db = try Database(path: path, mode: .readOnly)
      for (table, content) in before {
        let now = try Fixture.content(of: table, columns: content.columns, db)
        let lost = content.rows.filter { !now.contains($0) }
        #expect(lost.isEmpty, "\(table) lost or changed \(lost)")
        if table == "StoreInfo" {
          #expect(now.count >= content.rows.count)
        } else {
          #expect(now.count == content.rows.count, "\(table)")
          #expect(now == content.rows, "\(table)")
        }
      }
      #expect(try db.string("PRAGMA integrity_check") == "ok")
      #expect(try db.int64("SELECT count(*) FROM pragma_foreign_key_check") == 0)

      // (c) The schema is the one a fresh file gets.
      let freshDir = dir + "/fresh"
      try FileSystem.createPrivateDirectory(atPath: freshDir)
      let fresh = Fixture.path(owner: Self.owner, in: freshDir)
      let freshReport = try Migrator().migrate(fileAt: fresh)
      #expect(freshReport.created)
      #expect(try Fixture.schema(ofFileAt: path) == Fixture.schema(ofFileAt: fresh))

      // (d) A backup of the old version, private, unless nothing had to change.
      let backupNames = try fileNames(in: dir).filter { $0.contains(".bak") }
      if version >= 1 && version < latest {
        let backup = path + ".bak-v\(version)"
        #expect(report.backupPath == backup)
        #expect(backupNames == [(backup as NSString).lastPathComponent])
        #expect(FileSystem.permissions(atPath: backup) == 0o600)
        #expect(try Fixture.userVersion(ofFileAt: backup) == version)
        #expect(try Fixture.snapshot(ofFileAt: backup) == before)
      } else {
        #expect(report.backupPath == nil)
        #expect(backupNames.isEmpty)
      }
      #expect(!(try fileNames(in: dir)).contains { $0.contains(".tmp-") })
      #expect(FileSystem.permissions(atPath: path) == 0o600)

      // (e) Migrating again is a no-op.
      let again = try Migrator().migrate(fileAt: path)
      #expect(again.applied.isEmpty)
      #expect(again.fromVersion == latest && again.toVersion == latest)
      #expect(again.backupPath == nil)
      #expect(!again.created)
      #expect(try Fixture.recordedVersions(ofFileAt: path) == Array(1...latest))
    }
  }

  @Test("backup: false makes no backup", arguments: Array(1..<Fixture.latest))
  func noBackup(_ version: Int) throws {
    try withTemporaryDirectory { dir in
      let path = try Fixture.makeFile(at: version, in: dir, owner: Self.owner)
      let report = try Migrator().migrate(fileAt: path, backup: false)
      #expect(report.backupPath == nil)
      #expect(report.toVersion == Self.latest)
      #expect(try fileNames(in: dir).filter { $0.contains(".bak") }.isEmpty)
    }
  }

  @Test("Each step to each intermediate target leaves the file at that target", arguments: Array(0...Fixture.latest))
  func intermediateTargets(_ target: Int) throws {
    try withTemporaryDirectory { dir in
      let path = Fixture.path(owner: Self.owner, in: dir)
      let report = try Migrator().migrate(fileAt: path, to: target)
      #expect(report.toVersion == target)
      if target > 0 {
        #expect(try Fixture.userVersion(ofFileAt: path) == target)
        #expect(try Fixture.recordedVersions(ofFileAt: path) == Array(1...target))
      }
      // created says whether the run made the file.
      #expect(
        report.created == FileSystem.exists(path),
        "created is \(report.created) but the file exists: \(FileSystem.exists(path))")
      let rest = try Migrator().migrate(fileAt: path)
      #expect(rest.applied == Array(Migration.shipped.dropFirst(target)))
    }
  }

  @Test("An existing empty (0-byte) file is migrated in place")
  func emptyFile() throws {
    try withTemporaryDirectory { dir in
      let path = Fixture.path(owner: Self.owner, in: dir)
      try FileSystem.createPrivateFile(atPath: path)
      let status = try Migrator().status(ofFileAt: path)
      #expect(status.exists && status.version == 0 && !status.isSeedFile)
      let report = try Migrator().migrate(fileAt: path)
      #expect(!report.created)
      #expect(report.backupPath == nil)
      #expect(try Fixture.userVersion(ofFileAt: path) == Self.latest)
      let fresh = dir + "/fresh.db"
      _ = try Migrator().migrate(fileAt: fresh)
      #expect(try Fixture.schema(ofFileAt: path) == Fixture.schema(ofFileAt: fresh))
    }
  }

  @Test("From version 1, conversation_id is the other user's id and the owner is recorded")
  func conversationIDs() throws {
    try withTemporaryDirectory { dir in
      let owner = Self.owner
      let path = try Fixture.makeFile(at: 1, in: dir, owner: owner)
      _ = try Migrator().migrate(fileAt: path)
      let db = try Database(path: path, mode: .readOnly)
      let rows = try db.query("SELECT id, from_user_id, to_user_id, conversation_id FROM Messages ORDER BY id") {
        (id: $0.int64(0), from: $0.int64(1), to: $0.int64(2), conversation: $0.int64(3))
      }
      #expect(rows.contains { $0.from == owner } && rows.contains { $0.to == owner }, "messages in both directions")
      for row in rows {
        #expect(row.conversation == (row.from == owner ? row.to : row.from), "message \(row.id)")
        #expect(row.conversation != owner)
      }
      let expected = try #require(Fixture.rows(owner: owner).first { $0.table == "Messages" }?.rows)
      #expect(rows.map { DatabaseValue.integer($0.conversation) } == expected.map { $0["conversation_id"]! })
      #expect(try db.int64("SELECT value FROM StoreInfo WHERE key = 'owner_user_id'") == owner)
    }
  }

  // MARK: - Seed-era files

  /// The seed app's file: the three tables of 0001_initial.sql, rollback journal, no
  /// version, no records.
  static func makeSeedFile(at path: String, owner: Int64) throws {
    let db = try Database(path: path, mode: .create)
    try db.execute("PRAGMA journal_mode = DELETE")
    try db.execute(Migration.shipped[0].sql)
    try Fixture.fill(db, owner: owner)
  }

  @Test("A seed-era file is version 1, migrates with 0001 recorded as baseline, and keeps its rows")
  func seedFile() throws {
    try withTemporaryDirectory { dir in
      let path = Fixture.path(owner: Self.owner, in: dir)
      try Self.makeSeedFile(at: path, owner: Self.owner)
      #expect(try Fixture.userVersion(ofFileAt: path) == 0)
      #expect(try Fixture.recordedVersions(ofFileAt: path) == [])
      let before = try Fixture.snapshot(ofFileAt: path)

      let status = try Migrator().status(ofFileAt: path)
      #expect(status.version == 1)
      #expect(status.isSeedFile)
      #expect(status.applied.isEmpty)
      #expect(status.pending == Array(Migration.shipped.dropFirst()))

      let report = try Migrator().migrate(fileAt: path)
      #expect(report.fromVersion == 1)
      #expect(report.toVersion == Self.latest)
      #expect(report.applied == Array(Migration.shipped.dropFirst()))

      let after = try Migrator().status(ofFileAt: path)
      #expect(after.isCurrent && !after.isSeedFile)
      let baseline = try #require(after.applied.first)
      #expect(baseline.version == 1)
      #expect(baseline.name == Migration.shipped[0].name)
      #expect(baseline.checksum == Migration.shipped[0].checksum)
      #expect(baseline.appliedAt == "baseline")
      #expect(after.applied.map(\.version) == Array(1...Self.latest))
      #expect(after.applied.dropFirst().allSatisfy { ISO8601DateFormatter().date(from: $0.appliedAt) != nil })

      let db = try Database(path: path, mode: .readOnly)
      for (table, content) in before {
        #expect(try Fixture.content(of: table, columns: content.columns, db) == content.rows, "\(table)")
      }
      let fresh = dir + "/fresh.db"
      _ = try Migrator().migrate(fileAt: fresh)
      #expect(try Fixture.schema(ofFileAt: path) == Fixture.schema(ofFileAt: fresh))

      // The backup is still the seed file.
      let backup = try #require(report.backupPath)
      let backupStatus = try Migrator().status(ofFileAt: backup)
      #expect(backupStatus.isSeedFile && backupStatus.version == 1)
      #expect(FileSystem.permissions(atPath: backup) == 0o600)
    }
  }

  // MARK: - Owner inference

  /// `legacy.db` at version 1 with the given users, messages (from, to) and requests (to).
  static func makeLegacyFile(in dir: String, messages: [(Int64, Int64)], requests: [Int64] = []) throws -> String {
    let path = dir + "/legacy.db"
    let db = try Database(path: path, mode: .create)
    _ = try Migrator().apply([Migration.shipped[0]], to: db, owner: nil)
    let users = Set(messages.flatMap { [$0.0, $0.1] } + requests)
    for user in users.sorted() {
      try db.execute("INSERT INTO Users (id, name) VALUES (?, ?)", [user, "user \(user) ✓"])
    }
    for (i, m) in messages.enumerated() {
      try db.execute(
        "INSERT INTO Messages (id, from_user_id, to_user_id, content, status, created_at) VALUES (?, ?, ?, ?, 'sent', '2024-01-01')",
        [i + 1, m.0, m.1, "message \(i) 🎈"])
    }
    for (i, to) in requests.enumerated() {
      try db.execute(
        "INSERT INTO MessageRequests (request_id, to_user_id, content, status, last_modified_at) VALUES (?, ?, 'r', 'pending', '2024-01-01')",
        [i + 1, to])
    }
    return path
  }

  static func conversationIDs(ofFileAt path: String) throws -> [Int64] {
    try Database(path: path, mode: .readOnly).query("SELECT conversation_id FROM Messages ORDER BY id") { $0.int64(0) }
  }

  static func recordedOwner(ofFileAt path: String) throws -> Int64? {
    try Database(path: path, mode: .readOnly).int64("SELECT value FROM StoreInfo WHERE key = 'owner_user_id'")
  }

  @Test("The owner of a file not named chats-<id>.db is the user in every message")
  func ownerInferred() throws {
    try withTemporaryDirectory { dir in
      let path = try Self.makeLegacyFile(in: dir, messages: [(7, 1001), (1002, 7), (1001, 7), (7, 1002)])
      let report = try Migrator().migrate(fileAt: path)
      #expect(report.toVersion == Self.latest)
      #expect(try Self.recordedOwner(ofFileAt: path) == 7)
      #expect(try Self.conversationIDs(ofFileAt: path) == [1001, 1002, 1001, 1002])
    }
  }

  @Test("With one conversation, the owner is the one who is not an outbox recipient")
  func ownerFromRequests() throws {
    try withTemporaryDirectory { dir in
      let path = try Self.makeLegacyFile(in: dir, messages: [(1001, 7), (7, 1001)], requests: [1001])
      _ = try Migrator().migrate(fileAt: path)
      #expect(try Self.recordedOwner(ofFileAt: path) == 7)
      #expect(try Self.conversationIDs(ofFileAt: path) == [1001, 1001])
    }
  }

  @Test("With one conversation and no requests, the owner cannot be told: bad input, file unchanged")
  func ownerAmbiguous() throws {
    try withTemporaryDirectory { dir in
      let path = try Self.makeLegacyFile(in: dir, messages: [(7, 1001), (1001, 7)])
      let error = expectStoreError(.badInput) { _ = try Migrator().migrate(fileAt: path) }
      #expect(error?.message.contains(path) == true)
      #expect(try Fixture.userVersion(ofFileAt: path) == 1)
      #expect(try Fixture.recordedVersions(ofFileAt: path) == [1])
    }
  }

  @Test("An explicit owner is used when it cannot be inferred")
  func explicitOwner() throws {
    try withTemporaryDirectory { dir in
      let path = try Self.makeLegacyFile(in: dir, messages: [(7, 1001), (1001, 7)])
      _ = try Migrator().migrate(fileAt: path, owner: 1001)
      #expect(try Self.recordedOwner(ofFileAt: path) == 1001)
      #expect(try Self.conversationIDs(ofFileAt: path) == [7, 7])
    }
  }

  @Test("An explicit owner wins over the file name")
  func explicitOwnerOverName() throws {
    try withTemporaryDirectory { dir in
      let path = try Fixture.makeFile(at: 1, in: dir, owner: Self.owner)
      _ = try Migrator().migrate(fileAt: path, owner: 1001)
      #expect(try Self.recordedOwner(ofFileAt: path) == 1001)
    }
  }

  // MARK: - Refusals

  /// Runs `migrate` expecting a refusal of `kind` whose message names the path, and
  /// checks that the file kept its bytes and got no backup.
  func expectRefusal(
    _ kind: StoreError.Kind, path: String, migrator: Migrator = Migrator(), to target: Int? = nil, backup: Bool = true,
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws -> StoreError? {
    let bytes = FileManager.default.contents(atPath: path)
    let error = expectStoreError(kind, sourceLocation: sourceLocation) {
      _ = try migrator.migrate(fileAt: path, to: target, backup: backup)
    }
    if let error {
      #expect(
        error.message.contains(path), "the message names the file: \(error.message)", sourceLocation: sourceLocation)
      #expect(error.path == path, sourceLocation: sourceLocation)
    }
    #expect(
      FileManager.default.contents(atPath: path) == bytes, "the file is untouched", sourceLocation: sourceLocation)
    let dir = (path as NSString).deletingLastPathComponent
    #expect(
      try fileNames(in: dir).filter { $0.contains(".bak") || $0.contains(".tmp-") }.isEmpty,
      sourceLocation: sourceLocation)
    return error
  }

  @Test("A file newer than this binary is refused")
  func newerSchema() throws {
    try withTemporaryDirectory { dir in
      let path = try Fixture.makeFile(at: Self.latest, in: dir, owner: Self.owner)
      do {
        let db = try Database(path: path)
        try db.execute(
          "INSERT INTO chatdb_migrations (version, name, checksum, applied_at) VALUES (?, 'future', ?, '2099-01-01T00:00:00Z')",
          [Self.latest + 1, String(repeating: "0", count: 64)])
        try db.execute("PRAGMA user_version = \(Self.latest + 1)")
      }
      let status = try Migrator().status(ofFileAt: path)
      #expect(status.isNewer && status.version == Self.latest + 1 && status.pending.isEmpty && !status.isCurrent)
      _ = try expectRefusal(.newerSchema, path: path)
      #expect(try Fixture.userVersion(ofFileAt: path) == Self.latest + 1)
    }
  }

  @Test("A drifted migration (changed checksum) is refused and named", arguments: Array(1...Fixture.latest))
  func drift(_ version: Int) throws {
    try withTemporaryDirectory { dir in
      let path = try Fixture.makeFile(at: version, in: dir, owner: Self.owner)
      let drifted = Migration.shipped[version - 1]
      try Database(path: path).execute(
        "UPDATE chatdb_migrations SET checksum = ? WHERE version = ?", [String(repeating: "f", count: 64), version])
      let status = try Migrator().status(ofFileAt: path)
      #expect(status.drift.map(\.version) == [version])
      #expect(!status.isCurrent)
      let error = try expectRefusal(.schemaMismatch, path: path)
      #expect(error?.message.contains(drifted.fileName) == true, "\(error?.message ?? "")")
    }
  }

  @Test("A renamed migration record is drift too")
  func renamedRecord() throws {
    try withTemporaryDirectory { dir in
      let path = try Fixture.makeFile(at: 1, in: dir, owner: Self.owner)
      try Database(path: path).execute("UPDATE chatdb_migrations SET name = 'renamed' WHERE version = 1")
      let error = try expectRefusal(.schemaMismatch, path: path)
      #expect(error?.message.contains("0001_renamed") == true)
    }
  }

  @Test("A downgrade is refused")
  func downgrade() throws {
    try withTemporaryDirectory { dir in
      let path = try Fixture.makeFile(at: Self.latest, in: dir, owner: Self.owner)
      for target in 0..<Self.latest {
        _ = try expectRefusal(.badTarget, path: path, to: target)
      }
    }
  }

  @Test("An unknown target version is refused", arguments: [Fixture.latest + 1, -1, 1_000])
  func unknownTarget(_ target: Int) throws {
    try withTemporaryDirectory { dir in
      let path = try Fixture.makeFile(at: 1, in: dir, owner: Self.owner)
      _ = try expectRefusal(.badTarget, path: path, to: target)
      #expect(try Fixture.userVersion(ofFileAt: path) == 1)
    }
  }

  @Test("A file that is not a database is refused")
  func notADatabase() throws {
    try withTemporaryDirectory { dir in
      let path = Fixture.path(owner: Self.owner, in: dir)
      try writeRandomBytes(to: path)
      _ = try expectRefusal(.notADatabase, path: path)
      let statusError = expectStoreError(.notADatabase) { _ = try Migrator().status(ofFileAt: path) }
      #expect(statusError?.message.contains(path) == true)
    }
  }

  /// A version-1 file with enough messages to span many pages.
  static func makeLargeFile(in dir: String) throws -> String {
    let path = try Fixture.makeFile(at: 1, in: dir, owner: owner)
    let db = try Database(path: path)
    let insert = try db.prepare(
      "INSERT INTO Messages (from_user_id, to_user_id, content, status, created_at) VALUES (?, ?, ?, 'sent', '2024-01-01')"
    )
    try db.write { _ in
      for i in 0..<3000 {
        try insert.execute([owner, Fixture.others[i % 3], "message \(i) " + String(repeating: "🙂", count: 60)])
      }
    }
    return path
  }

  static func truncateToHalf(_ path: String) throws {
    #expect(!FileSystem.exists(path + "-wal"), "the WAL was folded in when the fixture closed")
    let size = try #require(FileSystem.size(atPath: path))
    try #require(size > 100 * 4096, "the fixture spans many pages")
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    try handle.truncate(atOffset: UInt64(size / 2))
    try handle.close()
  }

  @Test("Reading a truncated database fails cleanly with a not-a-database error")
  func truncatedRead() throws {
    try withTemporaryDirectory { dir in
      let path = try Self.makeLargeFile(in: dir)
      try Self.truncateToHalf(path)
      do {
        let db = try Database(path: path, mode: .readOnly)
        _ = try db.int64("SELECT sum(length(content)) FROM Messages")
        Issue.record("the truncation was not detected")
      } catch let error as SQLiteError {
        #expect(error.isCorruptOrNotADatabase, "\(error)")
      }
    }
  }

  @Test("A truncated database is refused as not a database")
  func truncatedMigrate() throws {
    try withTemporaryDirectory { dir in
      let path = try Self.makeLargeFile(in: dir)
      try Self.truncateToHalf(path)
      let error = expectStoreError(.notADatabase) { _ = try Migrator().migrate(fileAt: path) }
      #expect(error?.message.contains(path) == true)
      let statusError = expectStoreError(.notADatabase) { _ = try Migrator().status(ofFileAt: path) }
      #expect(statusError?.message.contains(path) == true)
    }
  }

  /// A file whose header is intact but whose Messages pages are damaged opens fine;
  /// the damage shows when migration 0002 reads every message. `.notADatabase` is
  /// documented for "a damaged page", so that is what the user must see, not
  /// "a migration failed".
  @Test("A database with damaged pages is refused as not a database, and rolled back")
  func damagedPages() throws {
    try withTemporaryDirectory { dir in
      let path = try Self.makeLargeFile(in: dir)
      let size = try #require(FileSystem.size(atPath: path))
      let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
      // Overwrite 8 pages in the middle (Messages leaves) with garbage.
      try handle.seek(toOffset: UInt64(size / 2 / 4096 * 4096))
      try handle.write(contentsOf: Data((0..<(8 * 4096)).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) }))
      try handle.close()
      do {
        let reader = try Database(path: path, mode: .readOnly)
        _ = try reader.int64("SELECT sum(length(content)) FROM Messages")
        Issue.record("the damage was not detected by a full read")
      } catch let error as SQLiteError {
        #expect(error.isCorruptOrNotADatabase, "\(error)")
      }
      let error = expectStoreError(.notADatabase) { _ = try Migrator().migrate(fileAt: path, backup: false) }
      #expect(error?.message.contains(path) == true)
      #expect(try Fixture.userVersion(ofFileAt: path) == 1, "the failed migration was rolled back")
    }
  }

  @Test("A file with unrelated tables is refused")
  func unrelatedTables() throws {
    try withTemporaryDirectory { dir in
      let path = Fixture.path(owner: Self.owner, in: dir)
      do {
        let db = try Database(path: path, mode: .create)
        try db.execute("CREATE TABLE foo (x); INSERT INTO foo VALUES (1)")
      }
      _ = try expectRefusal(.schemaMismatch, path: path)
      #expect(try Fixture.userVersion(ofFileAt: path) == 0)
      #expect(try Fixture.userTables(Database(path: path, mode: .readOnly)) == ["foo"])
    }
  }

  @Test(
    "A file changed outside chatdb (versions that disagree) is refused",
    arguments: [
      "PRAGMA user_version = 2", "DELETE FROM chatdb_migrations", "PRAGMA user_version = 0",
    ])
  func changedOutside(_ change: String) throws {
    try withTemporaryDirectory { dir in
      let path = try Fixture.makeFile(at: 1, in: dir, owner: Self.owner)
      try Database(path: path).execute(change)
      _ = try expectRefusal(.schemaMismatch, path: path)
    }
  }

  @Test("Not enough disk space is refused before anything changes", arguments: [true, false])
  func diskSpace(_ backup: Bool) throws {
    try withTemporaryDirectory { dir in
      let path = try Fixture.makeFile(at: 1, in: dir, owner: Self.owner)
      let migrator = Migrator(diskSpace: { _ in DiskSpace(available: 1000, total: 10_000) })
      let error = try expectRefusal(.diskSpace, path: path, migrator: migrator, backup: backup)
      #expect(error?.message.contains("1000") == true)
      #expect(try Fixture.userVersion(ofFileAt: path) == 1)
      #expect(try Fixture.recordedVersions(ofFileAt: path) == [1])
    }
  }

  @Test("The disk-space probe is asked about the file, and enough space lets the migration run")
  func diskSpaceEnough() throws {
    try withTemporaryDirectory { dir in
      let path = try Fixture.makeFile(at: 1, in: dir, owner: Self.owner)
      let migrator = Migrator(diskSpace: { probed in
        guard probed == path else { throw FixtureError("probed \(probed)") }
        return DiskSpace(available: 1 << 40, total: 1 << 41)
      })
      #expect(try migrator.migrate(fileAt: path).toVersion == Self.latest)
    }
  }

  @Test("A missing folder is a not-found error naming the file")
  func missingFolder() throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/no/such/chats-7.db"
      let error = expectStoreError(.notFound) { _ = try Migrator().migrate(fileAt: path) }
      #expect(error?.message.contains(path) == true)
    }
  }

  /// Each migration waits for the write lock; when another process holds it for longer
  /// than the busy timeout (5 s) the failure should say "busy", so the user retries.
  @Test("A file locked by another writer is reported busy")
  func busy() throws {
    try withTemporaryDirectory { dir in
      let path = try Fixture.makeFile(at: 1, in: dir, owner: Self.owner)
      let holder = try Database(path: path)
      try holder.inTransaction(.immediate) { db in
        try db.execute("INSERT INTO Users (id, name) VALUES (99, 'holder')")
        let error = expectStoreError(.busy) { _ = try Migrator().migrate(fileAt: path, backup: false) }
        #expect(error?.message.contains(path) == true)
        return .rollback
      }
      #expect(try Fixture.userVersion(ofFileAt: path) == 1)
    }
  }

  // MARK: - A failing migration

  static let badSecondMigrations: [(label: String, sql: String)] = [
    ("no such table", "CREATE TABLE b (x);\nINSERT INTO nowhere VALUES (1);"),
    ("foreign key violation", "CREATE TABLE c (a_id INTEGER REFERENCES a(id));\nINSERT INTO c VALUES (99);"),
    ("syntax error", "CREATE TABLE d (x);\nSELEC 1;"),
    ("NOT NULL violation", "CREATE TABLE e (x NOT NULL);\nINSERT INTO e VALUES (NULL);"),
    ("delete orphaning rows", "DELETE FROM a;"),
  ]

  static func customMigrator(second sql: String) throws -> Migrator {
    try Migrator(
      migrations: Migration.validated([
        Migration(
          fileName: "0001_first.sql",
          sql:
            "CREATE TABLE a (id INTEGER PRIMARY KEY);\nCREATE TABLE k (a_id INTEGER REFERENCES a(id));\nINSERT INTO a VALUES (1);\nINSERT INTO k VALUES (1);"
        ),
        Migration(fileName: "0002_second.sql", sql: sql),
      ]))
  }

  @Test(
    "A failing migration is rolled back and named; the file stays at the version before",
    arguments: badSecondMigrations.map(\.label))
  func failingMigration(_ label: String) throws {
    let sql = try #require(Self.badSecondMigrations.first { $0.label == label }?.sql)
    try withTemporaryDirectory { dir in
      let migrator = try Self.customMigrator(second: sql)
      let path = Fixture.path(owner: Self.owner, in: dir)
      // A new file is made whole beside its place: a failure leaves nothing.
      let created = expectStoreError(.writeFailed) { _ = try migrator.migrate(fileAt: path) }
      #expect(created?.message.contains("0002_second.sql") == true, "\(created?.message ?? "")")
      #expect(created?.message.contains(path) == true, "\(created?.message ?? "")")
      #expect(!FileSystem.exists(path))
      #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty)
      // An existing file stays at the version before the failing migration.
      _ = try migrator.migrate(fileAt: path, to: 1)
      let error = expectStoreError(.writeFailed) { _ = try migrator.migrate(fileAt: path) }
      #expect(error?.message.contains("0002_second.sql") == true, "\(error?.message ?? "")")
      #expect(error?.message.contains(path) == true)
      let status = try migrator.status(ofFileAt: path)
      #expect(status.version == 1)
      #expect(status.applied.map(\.version) == [1])
      #expect(status.pending.map(\.version) == [2])
      do {  // closed before the next migrate, which needs the file to itself
        let db = try Database(path: path, mode: .readOnly)
        #expect(try Fixture.userTables(db) == ["a", "chatdb_migrations", "k"])
        #expect(try db.int64("SELECT count(*) FROM a") == 1)
        #expect(try db.int64("PRAGMA foreign_keys") == 1)
      }

      // Again from an existing version-1 file: a backup is made and the file is kept.
      let backupReport = expectStoreError(.writeFailed) { _ = try migrator.migrate(fileAt: path) }
      #expect(backupReport != nil)
      #expect(try migrator.status(ofFileAt: path).version == 1)
      #expect(FileSystem.exists(path + ".bak-v1"))
    }
  }

  @Test("apply leaves foreign keys on after a failure")
  func foreignKeysBackOn() throws {
    let migrator = try Self.customMigrator(second: "SELEC 1;")
    let db = try Database(path: ":memory:")
    #expect(throws: StoreError.self) { _ = try migrator.apply(migrator.migrations, to: db, owner: nil) }
    #expect(try db.int64("PRAGMA foreign_keys") == 1)
    #expect(!db.isInTransaction)
    #expect(try db.int64("PRAGMA user_version") == 1)
  }

  // MARK: - Status

  @Test("status of a missing file: version 0, all pending, and the file is not created")
  func statusMissing() throws {
    try withTemporaryDirectory { dir in
      let path = Fixture.path(owner: Self.owner, in: dir)
      let status = try Migrator().status(ofFileAt: path)
      #expect(!status.exists)
      #expect(status.version == 0)
      #expect(status.latestVersion == Self.latest)
      #expect(status.pending == Migration.shipped)
      #expect(status.applied.isEmpty && status.drift.isEmpty)
      #expect(!status.isSeedFile && !status.isCurrent && !status.isNewer)
      #expect(status.fileSize == 0)
      #expect(!FileSystem.exists(path))
      #expect(try fileNames(in: dir).isEmpty)
    }
  }

  @Test("status reads a file without changing it", arguments: Array(1...Fixture.latest))
  func statusReadsOnly(_ version: Int) throws {
    try withTemporaryDirectory { dir in
      let path = try Fixture.makeFile(at: version, in: dir, owner: Self.owner)
      let bytes = FileManager.default.contents(atPath: path)
      let status = try Migrator().status(ofFileAt: path)
      #expect(status.exists && status.version == version && !status.isSeedFile)
      #expect(status.applied.map(\.version) == Array(1...version))
      #expect(status.pending == Array(Migration.shipped.dropFirst(version)))
      #expect(status.isCurrent == (version == Self.latest))
      #expect(status.fileSize >= FileSystem.size(atPath: path) ?? 0)
      #expect(FileManager.default.contents(atPath: path) == bytes)
    }
  }

  // MARK: - Malformed files must not crash

  /// A folder for an exit test, made and removed by the parent process (a crashing
  /// child cannot clean up).
  static func makeExitTestDirectory() -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("chatstore-tests-\(UUID().uuidString)")
      .path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
  }

  /// `status(of:)` indexes `migrations[record.version - 1]`; a record numbered 0 traps.
  @Test("A migration record numbered 0 is refused, not a crash")
  func recordZero() async {
    let dir = Self.makeExitTestDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    await #expect(processExitsWith: .success) { [dir = dir as String] in
      do {
        let path = try Fixture.makeFile(at: 1, in: dir, owner: 7)
        try Database(path: path).execute("INSERT INTO chatdb_migrations VALUES (0, 'zero', 'x', 'now')")
        do {
          _ = try Migrator().migrate(fileAt: path)
          exit(2)
        } catch let error as StoreError {
          exit(error.kind == .schemaMismatch ? 0 : 3)
        }
      }
    }
  }

  /// `status(of:)` accepts a negative user_version and then slices `migrations[-1...]`.
  @Test("A negative user_version is refused, not a crash")
  func negativeUserVersion() async {
    let dir = Self.makeExitTestDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    await #expect(processExitsWith: .success) { [dir = dir as String] in
      do {
        let path = dir + "/chats-7.db"
        try Database(path: path, mode: .create).execute("PRAGMA user_version = -1")
        do {
          _ = try Migrator().migrate(fileAt: path)
          exit(2)
        } catch let error as StoreError {
          exit(error.kind == .schemaMismatch ? 0 : 3)
        }
      }
    }
  }
}

/// Issue 14: `chat-sync send` and a starting `chat-sync run` (or two threads) creating the
/// same new file at once: each builds its own copy beside it, the first link wins, the
/// other uses that file; neither fails or writes into the other's copy.
@Suite(.ownThreads) struct ConcurrentCreationTests {
  @Test func twoCreatorsOfOneNewFileBothSucceed() throws {
    try withTemporaryDirectory { dir in
      for round in 0..<10 {
        let path = Fixture.path(owner: 100 + Int64(round), in: dir)
        let results = Results()
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
          results.add(Result { try Migrator().migrate(fileAt: path) })
        }
        let reports = try results.all.map { try $0.get() }
        #expect(reports.map(\.toVersion) == [Fixture.latest, Fixture.latest])
        #expect(reports.filter(\.created).count == 1, "round \(round): one of them created it")
        #expect(try Migrator().status(ofFileAt: path).version == Fixture.latest)
      }
      let left = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.contains("creating") }
      #expect(left.isEmpty, "\(left)")
    }
  }

  final class Results: @unchecked Sendable {
    // @unchecked: `results` is only touched under `lock`.
    private let lock = NSLock()
    private var results: [Result<Migrator.Report, any Error>] = []
    func add(_ result: Result<Migrator.Report, any Error>) { lock.withLock { results.append(result) } }
    var all: [Result<Migrator.Report, any Error>] { lock.withLock { results } }
  }
}
