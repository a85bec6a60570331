import ChatStore
import Foundation
import Testing

/// The result of running the built `chatdb`.
struct Run {
  var status: Int32
  var stdout: String
  var stderr: String
}

/// Runs the `chatdb` binary that `swift build` put beside the test bundle.
func chatdb(_ arguments: String..., environment: [String: String] = [:]) throws -> Run {
  try chatdb(arguments, environment: environment)
}

func chatdb(_ arguments: [String], environment: [String: String] = [:]) throws -> Run {
  try run(binaryDirectory.appendingPathComponent("chatdb").path, arguments, environment: environment)
}

/// Runs any program with `$CHATDB_DATA_DIR` unset (and `environment` added).
func run(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Run {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: path)
  process.arguments = arguments
  var env = ProcessInfo.processInfo.environment
  env.removeValue(forKey: StoreLocation.environmentKey)
  for (key, value) in environment { env[key] = value }
  process.environment = env
  let out = Pipe()
  let err = Pipe()
  process.standardOutput = out
  process.standardError = err
  process.standardInput = FileHandle.nullDevice
  try process.run()
  // Read both pipes before waiting, or a large output would block the child forever.
  let errData = DataBox()
  let group = DispatchGroup()
  group.enter()
  DispatchQueue.global().async {
    errData.data = err.fileHandleForReading.readDataToEndOfFile()
    group.leave()
  }
  let outData = out.fileHandleForReading.readDataToEndOfFile()
  group.wait()
  process.waitUntilExit()
  return Run(
    status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
    stderr: String(decoding: errData.data, as: UTF8.self))
}

/// Written by one reader thread, read after `DispatchGroup.wait()`: the wait orders the
/// accesses, so no lock is needed.
private final class DataBox: @unchecked Sendable {
  var data = Data()
}

/// The folder holding the built products (the test bundle sits beside `chatdb`).
let binaryDirectory: URL = {
  var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
  while url.path != "/" {
    url.deleteLastPathComponent()
    if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("chatdb").path) { return url }
  }
  fatalError("cannot find the built chatdb next to \(CommandLine.arguments[0]); run `swift build` first")
}()

/// A fresh temporary folder, removed when the value is dropped.
final class TemporaryFolder {
  let path: String
  init() throws {
    path = FileManager.default.temporaryDirectory.appendingPathComponent("chatdb-e2e-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }
  deinit { try? FileManager.default.removeItem(atPath: path) }
  func file(_ name: String) -> String { path + "/" + name }
}

/// Parses a JSON object printed by `--json`.
func jsonObject(_ text: String) throws -> [String: Any] {
  let value = try JSONSerialization.jsonObject(with: Data(text.utf8))
  return try #require(value as? [String: Any])
}

/// Builds `chats-<owner>.db` at `version` with rows in every table, through ChatStore.
func makeDatabase(at version: Int, path: String, owner: Int64) throws {
  let db = try Database(path: path, mode: .create)
  _ = try Migrator().apply(Array(Migration.shipped.prefix(version)), to: db, owner: owner)
  guard version >= 1 else { return }
  let peer = owner + 1000
  try db.execute("INSERT INTO Users (id, name, avatar_url, last_connected_at) VALUES (?, 'Owner', NULL, NULL)", [owner])
  try db.execute(
    "INSERT INTO Users (id, name, avatar_url, last_connected_at) VALUES (?, 'Zoë 李', 'https://a.invalid/z.png', '2026-11-01T00:00:00Z')",
    [peer])
  let messageColumns = try db.query("SELECT name FROM pragma_table_info('Messages')") { $0.string(0) }
  let hasConversation = messageColumns.contains("conversation_id")
  for i in 1...5 {
    let (from, to) = i % 2 == 0 ? (owner, peer) : (peer, owner)
    if hasConversation {
      try db.execute(
        "INSERT INTO Messages (id, from_user_id, to_user_id, content, status, created_at, conversation_id) VALUES (?, ?, ?, ?, 'READ', ?, ?)",
        [Int64(i), from, to, "message \(i) 👋", "2026-11-0\(i)T00:00:00Z", peer])
    } else {
      try db.execute(
        "INSERT INTO Messages (id, from_user_id, to_user_id, content, status, created_at) VALUES (?, ?, ?, ?, 'READ', ?)",
        [Int64(i), from, to, "message \(i) 👋", "2026-11-0\(i)T00:00:00Z"])
    }
  }
  try db.execute(
    "INSERT INTO MessageRequests (request_id, to_user_id, content, status, last_modified_at, last_sent_at, fail_count) VALUES (1, ?, 'unsent', 'PENDING', '2026-11-06T00:00:00Z', NULL, 0)",
    [peer])
}

/// Row counts of the three seed tables.
func rowCounts(_ path: String) throws -> [Int64] {
  let db = try Database(path: path, mode: .readOnly)
  return try ["Users", "Messages", "MessageRequests"].map { try db.int64("SELECT count(*) FROM \($0)") ?? -1 }
}

/// `PRAGMA user_version` of a file.
func userVersion(_ path: String) throws -> Int {
  Int(try Database(path: path, mode: .readOnly).int64("PRAGMA user_version") ?? -1)
}

/// The `--json` envelope of a run, checked for the keys every command prints.
func envelope(_ run: Run) throws -> [String: Any] {
  let object = try jsonObject(run.stdout)
  #expect(Set(object.keys).isSuperset(of: ["command", "ok", "exitCode", "files", "summary"]), "\(run.stdout)")
  #expect(object["exitCode"] as? Int == Int(run.status))
  return object
}

/// The entries of the envelope's `files`.
func fileEntries(_ run: Run) throws -> [[String: Any]] {
  try #require(try envelope(run)["files"] as? [[String: Any]])
}

/// The `result` of the envelope's only (or first) file.
func fileResult(_ run: Run) throws -> [String: Any] {
  try #require(try fileEntries(run).first?["result"] as? [String: Any], "\(run.stdout)")
}

/// The envelope's `summary`.
func summary(_ run: Run) throws -> [String: Any] {
  try #require(try envelope(run)["summary"] as? [String: Any])
}
