import ChatCLI
import ChatStore
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `chatdb usage` and `chatdb evict`, run as a user runs them.
@Suite(.ownThreads) struct StorageCommandTests {
  /// Generated histories end at 2026-01-01: ages are measured from there.
  static let now = "2026-01-01"

  static func generate(_ folder: TemporaryFolder, user: Int = 1, messages: Int = 5_000) throws {
    let run = try chatdb(
      "generate", "--user", String(user), "--contacts", "20", "--messages", String(messages), "--seed", "5",
      "--data-dir", folder.path)
    #expect(run.status == 0, "\(run.stderr)")
  }

  static func messageIDs(_ path: String) throws -> [Int64] {
    try Database(path: path, mode: .readOnly).query("SELECT id FROM Messages ORDER BY id") { $0.int64(0) }
  }

  static func outbox(_ path: String) throws -> [String] {
    try Database(path: path, mode: .readOnly).query("SELECT * FROM MessageRequests ORDER BY request_id") {
      $0.values.map(\.description).joined(separator: "|")
    }
  }

  // MARK: - usage

  @Test func usageReportsEveryFigureInBytes() throws {
    let folder = try TemporaryFolder()
    try Self.generate(folder)
    let path = folder.file("chats-1.db")
    let run = try chatdb(
      "usage", "--user", "1", "--data-dir", folder.path, "--json", "--warn-below", "0%", "--critical-below", "0%")
    #expect(run.status == 0, "\(run.stderr)")
    let json = try fileResult(run)
    #expect(json["totalBytes"] as? Int == Int(FileSystem.databaseSize(atPath: path)))
    #expect(json["messages"] as? Int == 5_000)
    let conversations = try #require(json["conversations"] as? [[String: Any]])
    #expect(conversations.reduce(0) { $0 + ($1["messages"] as? Int ?? 0) } == 5_000)
    let tables = try #require(json["tables"] as? [[String: Any]])
    #expect(tables.contains { $0["name"] as? String == "Messages_by_conversation" && $0["index"] as? Bool == true })
    let disk = try #require(try summary(run)["disk"] as? [String: Any])
    #expect(disk["level"] as? String == "ok")
    #expect((disk["available"] as? Int ?? 0) > 0)

    let text = try chatdb(
      "usage", "--user", "1", "--data-dir", folder.path, "--warn-below", "0%", "--critical-below", "0%")
    #expect(text.status == 0)
    #expect(text.stdout.contains("Top 10 of"))
    #expect(text.stdout.contains("Messages_by_created_at"))
    #expect(!text.stdout.contains("█"), "no bar chart when piped")
  }

  @Test(arguments: [
    (["--warn-below", "0%", "--critical-below", "0%"], Int32(0), "OK"),
    (["--warn-below", "100%", "--critical-below", "0B"], 2, "LOW"),
    (["--critical-below", "100%"], 3, "CRITICAL"),
  ])
  func checkMakesTheExitCodeTheLevel(thresholds: [String], status: Int32, level: String) throws {
    let folder = try TemporaryFolder()
    try Self.generate(folder)
    let run = try chatdb(
      ["usage", "--user", "1", "--data-dir", folder.path, "--check", "--now", Self.now] + thresholds)
    #expect(run.status == status, "\(run.stderr)")
    #expect(run.stdout.contains(": \(level) (low below"))
    if status != 0 {
      // Suggestions with the bytes they free, from the evict planner.
      // A suggestion runs as printed: same data folder, same --now (issue 9, item 4).
      let printed = "chatdb evict --data-dir \(folder.path) --user 1 --older-than 180d --now 2026-01-01T00:00:00.000Z"
      #expect(run.stdout.contains(printed + "  frees"), "\(run.stdout)")
      let dry = try chatdb(
        "evict", "--user", "1", "--data-dir", folder.path, "--older-than", "180d", "--now", Self.now, "--dry-run",
        "--json")
      let plan = try fileResult(dry)
      let frees = (plan["fileBytes"] as? Int ?? 0) - (plan["expectedSize"] as? Int ?? 0)
      let json = try summary(
        try chatdb(["usage", "--user", "1", "--data-dir", folder.path, "--json", "--now", Self.now] + thresholds))
      let suggestions = try #require(json["suggestions"] as? [[String: Any]])
      let byAge = try #require(
        suggestions.first {
          ($0["command"] as? String)?.hasSuffix("--older-than 180d --now 2026-01-01T00:00:00.000Z") == true
        })
      #expect(byAge["frees"] as? Int == frees)
      // Run exactly as printed (without the program name), it deletes what it promised.
      let words = printed.split(separator: " ").dropFirst().map(String.init)
      let ran = try chatdb(words + ["--json"])
      #expect(ran.status == 0, "\(ran.stderr)")
      #expect(try fileResult(ran)["deletedMessages"] as? Int == plan["messages"] as? Int)
    }
  }

  @Test func usageAllGoesOnPastAnUnreadableFile() throws {
    let folder = try TemporaryFolder()
    let gen = try chatdb("generate", "--users", "3", "--contacts", "5", "--messages", "500", "--data-dir", folder.path)
    #expect(gen.status == 0, "\(gen.stderr)")
    let broken = folder.file("chats-2.db")
    try FileManager.default.removeItem(atPath: broken)
    try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: broken))
    let run = try chatdb(
      "usage", "--all", "--data-dir", folder.path, "--json", "--warn-below", "0%", "--critical-below", "0%")
    #expect(run.status == 1)
    #expect(run.stdout.contains("chats-2.db"))
    let json = try envelope(run)
    let files = try #require(json["files"] as? [[String: Any]])
    #expect(files.count == 3)
    #expect(files.filter { $0["error"] != nil }.count == 1)
    let summary = try #require(json["summary"] as? [String: Any])
    #expect(summary["failed"] as? Int == 1)
    #expect(summary["messages"] as? Int == 1_000)
    let text = try chatdb("usage", "--all", "--data-dir", folder.path, "--warn-below", "0%", "--critical-below", "0%")
    #expect(text.status == 1)
    #expect(text.stdout.contains("3 file(s) in"))
    #expect(text.stdout.contains("1 unreadable"))
  }

  // MARK: - evict

  @Test func dryRunChangesNothingAndShowsWhatTheRunDoes() throws {
    let folder = try TemporaryFolder()
    try Self.generate(folder)
    let path = folder.file("chats-1.db")
    let before = try Self.messageIDs(path)
    let outbox = try Self.outbox(path)
    let args = [
      "evict", "--user", "1", "--data-dir", folder.path, "--older-than", "90d", "--keep-last", "10", "--now", Self.now,
    ]
    let dry = try chatdb(args + ["--dry-run", "--json"])
    #expect(dry.status == 0, "\(dry.stderr)")
    #expect(try Self.messageIDs(path) == before)
    let plan = try fileResult(dry)
    let text = try chatdb(args + ["--dry-run"])
    #expect(text.stdout.contains("would delete \((plan["messages"] as? Int ?? -1).grouped) messages"))
    #expect(try Self.messageIDs(path) == before)

    let run = try chatdb(args + ["--json"])
    #expect(run.status == 0, "\(run.stderr)")
    let result = try fileResult(run)
    #expect(result["deletedMessages"] as? Int == plan["messages"] as? Int)
    #expect((result["freedBytes"] as? Int ?? 0) > 0)
    #expect(result["fileSizeAfter"] as? Int == Int(FileSystem.size(atPath: path) ?? -1))
    #expect(try Self.messageIDs(path).count == before.count - (plan["messages"] as? Int ?? 0))
    #expect(try Self.outbox(path) == outbox)
  }

  @Test(arguments: [
    [String](), ["--least-recent"], ["--older-than", "90x"], ["--max-size", "lots"], ["--conversation", "abc"],
    ["--keep-last", "-1"],
  ])
  func badPoliciesAreUsageErrors(options: [String]) throws {
    let folder = try TemporaryFolder()
    let run = try chatdb(["evict", "--user", "1", "--data-dir", folder.path] + options)
    #expect(run.status == 64)
    #expect(run.stderr.hasPrefix("Error: "))
    #expect(run.stderr.contains("Usage: chatdb evict"))
  }

  @Test func aMissingFileIsNamed() throws {
    let folder = try TemporaryFolder()
    let run = try chatdb("evict", "--user", "4", "--data-dir", folder.path, "--older-than", "1d")
    #expect(run.status == 66)
    #expect(run.stderr.contains("chats-4.db"))
    #expect(!FileSystem.exists(folder.file("chats-4.db")))
  }

  @Test func killedMidWayTheFileIsConsistentAndARerunFinishesTheSameJob() throws {
    let folder = try TemporaryFolder()
    try Self.generate(folder, messages: 40_000)
    let path = folder.file("chats-1.db")
    let copy = folder.file("copy.db")
    try FileManager.default.copyItem(atPath: path, toPath: copy)
    let outbox = try Self.outbox(path)
    let total = try Self.messageIDs(path).count
    let policy = ["--older-than", "60d", "--keep-last", "5", "--now", Self.now]

    // The reference: the same policy run to the end on a copy.
    let reference = try chatdb(["evict", "--db", copy] + policy)
    #expect(reference.status == 0, "\(reference.stderr)")
    let expected = try Self.messageIDs(copy)
    #expect(expected.count < total)

    let process = Process()
    process.executableURL = binaryDirectory.appendingPathComponent("chatdb")
    process.arguments = ["evict", "--db", path, "--chunk-rows", "50"] + policy
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    // Wait until some chunks are committed, then kill it without warning.
    let watcher = try Database(path: path, mode: .readOnly)
    var left = total
    for _ in 0..<5_000 where left > total - 500 && process.isRunning {
      usleep(2_000)
      left = Int(try watcher.int64("SELECT count(*) FROM Messages") ?? Int64(total))
    }
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    #expect(process.terminationReason == .uncaughtSignal, "the run finished before it could be killed")

    let check = try Database(path: path)
    #expect(try check.string("PRAGMA integrity_check") == "ok")
    #expect(try Self.outbox(path) == outbox)
    let rerun = try chatdb(["evict", "--db", path] + policy)
    #expect(rerun.status == 0, "\(rerun.stderr)")
    #expect(try Self.messageIDs(path) == expected)
  }
}
