import ChatStore
import Foundation
import TestSupport
import Testing

@Suite(.ownThreads) struct HelpAndUsageTests {
  @Test(arguments: [
    ["--help"], ["-h"], ["migrate", "--help"], ["help", "migrate"], ["help", "migrate", "status"],
    ["migrate", "status", "-h"], [],
  ])
  func helpGoesToStdoutWithExitZero(arguments: [String]) throws {
    let run = try chatdb(arguments)
    #expect(run.status == 0)
    #expect(run.stdout.contains("OVERVIEW:"))
    #expect(run.stdout.contains("USAGE: chatdb"))
    #expect(run.stderr.isEmpty)
  }

  @Test func versionPrintsOnStdout() throws {
    let run = try chatdb("--version")
    #expect(run.status == 0)
    #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines).first?.isNumber == true)
  }

  @Test(arguments: [
    (["migrate", "--dry-runn", "--user", "1"], "Error: Unknown option '--dry-runn'. Did you mean '--dry-run'?"),
    (["migrate", "--user"], "Error: Missing value for '--user <id>'"),
    (["migrate", "--user", "1", "extra"], "Error: Unexpected argument 'extra'"),
    (["migrate", "--to", "abc", "--user", "1"], "Error: The value 'abc' is invalid for '--to <version>'"),
    (["migrate"], "Error: Missing '--user <id>', '--db <path>' or '--all'"),
    (["migrate", "--user", "1", "--db", "x.db"], "Error: Use only one of '--user <id>', '--db <path>' and '--all'"),
    (["migrat"], "Error: Unexpected argument 'migrat'"),
  ])
  func usageErrorsExit64WithUsageLine(arguments: [String], expected: String) throws {
    let folder = try TemporaryFolder()
    let run = try chatdb(arguments + ["--data-dir", folder.path])
    #expect(run.status == 64)
    let lines = run.stderr.split(separator: "\n").map(String.init)
    #expect(lines.first?.hasPrefix(expected) == true, "stderr: \(run.stderr)")
    #expect(lines.count >= 2 && lines[1].hasPrefix("Usage: chatdb"))
    #expect(run.stdout.isEmpty)
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
  }

  @Test(arguments: ["../x", "1;drop", "-5", "007x", "", "0", "9223372036854775808", " 5"])
  func badUserIDsAreUsageErrorsAndCreateNothing(id: String) throws {
    let folder = try TemporaryFolder()
    let run = try chatdb("migrate", "--data-dir", folder.path, "--user", id)
    #expect(run.status == 64)
    #expect(run.stderr.hasPrefix("Error: The value '\(id)' is invalid for '--user <id>'"), "stderr: \(run.stderr)")
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
  }
}

@Suite(.ownThreads) struct MigrateCommandTests {
  @Test func createsAPrivateFileInAPrivateFolder() throws {
    let folder = try TemporaryFolder()
    let data = folder.file("data/nested")
    let run = try chatdb("migrate", "--data-dir", data, "--user", "42")
    #expect(run.status == 0, "\(run.stderr)")
    let path = data + "/chats-42.db"
    #expect(run.stdout.contains("\(path): created at version \(Migration.shipped.count)"))
    #expect(FileSystem.permissions(atPath: path) == 0o600)
    #expect(FileSystem.permissions(atPath: data) == 0o700)
    #expect(try userVersion(path) == Migration.shipped.count)
    let owner = try Database(path: path, mode: .readOnly).int64(
      "SELECT value FROM StoreInfo WHERE key = 'owner_user_id'")
    #expect(owner == 42)
  }

  @Test func dataDirComesFromTheEnvironment() throws {
    let folder = try TemporaryFolder()
    let run = try chatdb(["migrate", "--user", "7"], environment: ["CHATDB_DATA_DIR": folder.path])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(FileSystem.exists(folder.file("chats-7.db")))
  }

  @Test func jsonReportsTheMigration() throws {
    let folder = try TemporaryFolder()
    let path = folder.file("chats-3.db")
    try makeDatabase(at: 1, path: path, owner: 3)
    let run = try chatdb("migrate", "--db", path, "--json")
    #expect(run.status == 0, "\(run.stderr)")
    let json = try fileResult(run)
    #expect(json["fromVersion"] as? Int == 1)
    #expect(json["toVersion"] as? Int == Migration.shipped.count)
    #expect(json["backup"] as? String == path + ".bak-v1")
    #expect((json["migrations"] as? [Any])?.count == Migration.shipped.count - 1)
    #expect(try rowCounts(path) == [2, 5, 1])
  }

  @Test func dryRunPrintsTheSQLAndTouchesNothing() throws {
    let folder = try TemporaryFolder()
    let path = folder.file("chats-3.db")
    try makeDatabase(at: 1, path: path, owner: 3)
    let before = try Data(contentsOf: URL(fileURLWithPath: path))
    let run = try chatdb("migrate", "--db", path, "--dry-run")
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stdout.contains("would migrate from version 1 to version \(Migration.shipped.count)"))
    #expect(run.stdout.contains("-- 0002_conversations.sql"))
    #expect(run.stdout.contains("CREATE INDEX"))
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    #expect(!FileSystem.exists(path + ".bak-v1"))

    let missing = folder.file("chats-9.db")
    let create = try chatdb("migrate", "--db", missing, "--dry-run")
    #expect(create.status == 0)
    #expect(create.stdout.contains("would create it at version"))
    #expect(!FileSystem.exists(missing))
  }

  @Test func noBackupSkipsTheBackup() throws {
    let folder = try TemporaryFolder()
    let path = folder.file("chats-3.db")
    try makeDatabase(at: 1, path: path, owner: 3)
    let run = try chatdb("migrate", "--db", path, "--no-backup")
    #expect(run.status == 0, "\(run.stderr)")
    #expect(!FileSystem.exists(path + ".bak-v1"))
    #expect(try userVersion(path) == Migration.shipped.count)
  }

  @Test func refusalsHaveTheirOwnExitCodesAndNameTheFile() throws {
    let folder = try TemporaryFolder()
    let latest = Migration.shipped.count

    let newer = folder.file("chats-1.db")
    try makeDatabase(at: latest, path: newer, owner: 1)
    try Database(path: newer).execute(
      "INSERT INTO chatdb_migrations VALUES (\(latest + 1), 'future', 'x', 'now'); PRAGMA user_version = \(latest + 1)")
    let r1 = try chatdb("migrate", "--db", newer)
    #expect(r1.status == 10)
    #expect(r1.stderr.hasPrefix("Error: \(newer) is at schema version \(latest + 1), newer than"), "\(r1.stderr)")

    let drifted = folder.file("chats-2.db")
    try makeDatabase(at: 1, path: drifted, owner: 2)
    try Database(path: drifted).execute("UPDATE chatdb_migrations SET checksum = 'edited' WHERE version = 1")
    let r2 = try chatdb("migrate", "--db", drifted)
    #expect(r2.status == 11)
    #expect(r2.stderr.contains(drifted) && r2.stderr.contains("0001_initial"), "\(r2.stderr)")
    #expect(try userVersion(drifted) == 1)

    let current = folder.file("chats-3.db")
    try makeDatabase(at: latest, path: current, owner: 3)
    let r3 = try chatdb("migrate", "--db", current, "--to", "1")
    #expect(r3.status == 12)
    #expect(r3.stderr.contains("downgrading"), "\(r3.stderr)")

    let junk = folder.file("chats-4.db")
    try Data("this is not a database, just text long enough to be a header......".utf8).write(
      to: URL(fileURLWithPath: junk))
    let r4 = try chatdb("migrate", "--db", junk)
    #expect(r4.status == 65)
    #expect(r4.stderr.hasPrefix("Error: \(junk) is not a SQLite database"), "\(r4.stderr)")
    #expect(r4.stderr.split(separator: "\n").count == 1)
  }

  /// Done when: `migrate --all` upgrades a folder holding files at every older version
  /// plus one corrupt file, reports that one and upgrades the rest with no row lost.
  @Test func migrateAllUpgradesEveryOlderFileAndReportsTheCorruptOne() throws {
    let folder = try TemporaryFolder()
    let latest = Migration.shipped.count
    var expected: [String: [Int64]] = [:]
    for version in 0...latest {
      let owner = Int64(version + 1)
      let path = folder.file("chats-\(owner).db")
      try makeDatabase(at: version, path: path, owner: owner)
      expected[path] = version == 0 ? [0, 0, 0] : try rowCounts(path)
    }
    let corrupt = folder.file("chats-99.db")
    try Data(repeating: 0xAB, count: 8192).write(to: URL(fileURLWithPath: corrupt))

    let run = try chatdb("migrate", "--data-dir", folder.path, "--all")
    #expect(run.status == 1)
    #expect(run.stdout.contains("chats-99.db"))
    #expect(run.stdout.contains("FAILED"))
    #expect(
      run.stdout.contains("\(latest + 2) file(s) in \(folder.path): \(latest + 1) ok (\(latest) changed), 1 failed"),
      "\(run.stdout)")
    for (path, counts) in expected {
      #expect(try userVersion(path) == latest, "\(path)")
      #expect(try rowCounts(path) == counts, "\(path)")
    }
    #expect(try Data(contentsOf: URL(fileURLWithPath: corrupt)) == Data(repeating: 0xAB, count: 8192))

    let json = try summary(try chatdb("migrate", "status", "--data-dir", folder.path, "--all", "--json"))
    #expect(json["failed"] as? Int == 1)
  }

  @Test func statusShowsVersionPendingAndSize() throws {
    let folder = try TemporaryFolder()
    let path = folder.file("chats-5.db")
    try makeDatabase(at: 1, path: path, owner: 5)
    let run = try chatdb("migrate", "status", "--db", path)
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stdout.contains("Schema version:  1 (latest \(Migration.shipped.count))"))
    #expect(run.stdout.contains("0002_conversations.sql"))
    let json = try fileResult(try chatdb("migrate", "status", "--db", path, "--json"))
    #expect(json["version"] as? Int == 1)
    #expect((json["pending"] as? [Any])?.count == Migration.shipped.count - 1)
    #expect((json["fileSize"] as? Int ?? 0) > 0)

    let missing = try chatdb("migrate", "status", "--db", folder.file("chats-6.db"))
    #expect(missing.status == 0)
    #expect(missing.stdout.contains("missing"))
    #expect(!FileSystem.exists(folder.file("chats-6.db")))
  }
}
