import ChatStore
import Foundation
import TestSupport
import Testing

/// `chatdb index`, `check` and `vacuum` through the built binary: stdout, stderr and
/// exit codes together.
@Suite(.ownThreads) struct HealthCommands {
  /// A generated `chats-1.db` in a fresh folder.
  static func generated() throws -> (TemporaryFolder, String) {
    let folder = try TemporaryFolder()
    let run = try chatdb(
      "generate", "--data-dir", folder.path, "--user", "1", "--contacts", "10", "--messages", "3000", "--seed", "3")
    #expect(run.status == 0, "\(run.stderr)")
    return (folder, folder.file("chats-1.db"))
  }

  @Test func verifyDropApplyVerify() throws {
    let (folder, path) = try Self.generated()
    var run = try chatdb("index", "verify", "--data-dir", folder.path, "--user", "1")
    #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    #expect(!run.stdout.contains("SCAN Messages\t"))
    #expect(run.stdout.contains("all use their indexes"))

    try Database(path: path).execute("DROP INDEX Messages_by_conversation")
    run = try chatdb("index", "verify", "--db", path)
    #expect(run.status == 4)
    let scanning = run.stdout.split(separator: "\n").filter { $0.hasPrefix("SCAN\t") }
    #expect(scanning.contains { $0.contains(HotQuery.messagesBefore.name) })
    #expect(scanning.contains { $0.contains(HotQuery.messagesAfter.name) })

    run = try chatdb("index", "apply", "--db", path, "--dry-run")
    #expect(run.status == 0)
    #expect(run.stdout.contains("CREATE INDEX Messages_by_conversation ON Messages (conversation_id, id);"))
    #expect(try chatdb("index", "verify", "--db", path).status == 4)

    run = try chatdb("index", "apply", "--db", path)
    #expect(run.status == 0, "\(run.stderr)")
    run = try chatdb("index", "verify", "--db", path, "--json")
    #expect(run.status == 0)
    #expect(try envelope(run)["ok"] as? Bool == true)
  }

  @Test func checkCleanThenFindings() throws {
    let (folder, path) = try Self.generated()
    var run = try chatdb("check", "--db", path)
    #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    #expect(run.stdout.contains("clean"))

    try Database(path: path).execute("UPDATE MessageRequests SET fail_count = -3")
    run = try chatdb("check", "--db", path, "--json")
    #expect(run.status == 4)
    let findings = try #require(try fileResult(run)["findings"] as? [[String: Any]])
    #expect(findings.map { $0["check"] as? String } == ["request-negative-fail-count"])

    // A damaged file beside it: --all reports both, one row each, and exits 1 (a file failed).
    try Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 * 7) }).write(
      to: URL(fileURLWithPath: folder.file("chats-2.db")))
    run = try chatdb("check", "--data-dir", folder.path, "--all")
    #expect(run.status == 1)
    #expect(run.stdout.contains("chats-1.db") && run.stdout.contains("1 finding(s)"))
    #expect(run.stdout.contains("chats-2.db") && run.stdout.contains("FAILED (exit 65)"))
    // Without the damaged file, the findings decide: 4.
    try FileManager.default.removeItem(atPath: folder.file("chats-2.db"))
    #expect(try chatdb("check", "--data-dir", folder.path, "--all").status == 4)
  }

  @Test func checkNotADatabaseIsOneLine() throws {
    let folder = try TemporaryFolder()
    let path = folder.file("chats-3.db")
    try Data(repeating: 0x41, count: 10_000).write(to: URL(fileURLWithPath: path))
    let run = try chatdb("check", "--db", path)
    #expect(run.status == 65)
    #expect(run.stdout.isEmpty)
    let lines = run.stderr.split(separator: "\n")
    #expect(lines.count == 1)
    #expect(lines.first?.hasPrefix("Error: \(path)") == true)
  }

  @Test func vacuumReportsBeforeAndAfter() throws {
    let (folder, path) = try Self.generated()
    do {
      let db = try Database(path: path)
      try db.execute("DELETE FROM Messages WHERE id % 3 = 0")
      try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }
    let into = folder.file("compact.db")
    var run = try chatdb("vacuum", "--db", path, "--into", into, "--json")
    #expect(run.status == 0, "\(run.stderr)")
    var object = try fileResult(run)
    #expect(object["into"] as? String == into)
    #expect(object["bytesFreed"] as? Int == 0, "a copy frees nothing")
    #expect(!run.stdout.contains("freed"))
    #expect(FileSystem.exists(into))

    run = try chatdb("vacuum", "--db", path, "--json")
    #expect(run.status == 0, "\(run.stderr)")
    object = try fileResult(run)
    let before = try #require(object["bytesBefore"] as? Int)
    let after = try #require(object["bytesAfter"] as? Int)
    #expect(after < before)
    #expect(Int64(after) == FileSystem.databaseSize(atPath: path))
  }
}
