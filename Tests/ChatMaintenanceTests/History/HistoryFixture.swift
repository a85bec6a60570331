import ChatMaintenance
import ChatStore
import Foundation
import Testing

/// A temporary folder with helpers to make user files and history files.
final class HistoryFolder {
  let path: String

  init() throws {
    path = FileManager.default.temporaryDirectory.appendingPathComponent("history-\(UUID().uuidString)").path
    try FileSystem.createPrivateDirectory(atPath: path)
  }

  deinit { try? FileManager.default.removeItem(atPath: path) }

  func file(_ name: String) -> String { path + "/" + name }

  /// A fresh `chats-<owner>.db` at the latest version.
  func database(owner: Int64 = 1) throws -> Database {
    let path = file("chats-\(owner).db")
    _ = try Migrator().migrate(fileAt: path, owner: owner)
    return try Database(path: path)
  }

  /// Writes `text` as a file and returns its path.
  func write(_ name: String, _ bytes: [UInt8]) throws -> String {
    let path = file(name)
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return path
  }

  func write(_ name: String, lines: [String]) throws -> String {
    try write(name, Array(lines.map { $0 + "\n" }.joined().utf8))
  }

  /// Exports `db` to a zstd file and returns its path.
  func export(
    _ db: Database, owner: Int64 = 1, filter: ExportFilter = ExportFilter(), name: String = "export.ndjson.zst"
  ) throws
    -> String
  {
    let output = try OutputFile(path: file(name))
    let sink = try HistoryExporter.sink(fileDescriptor: output.fileDescriptor, name: output.path)
    _ = try HistoryExporter.export(db, owner: owner, filter: filter, to: sink)
    try output.commit()
    return output.path
  }

  /// Imports a file into `db`.
  @discardableResult
  func importFile(_ path: String, into db: Database, owner: Int64 = 1, batchSize: Int = 1000, skip: Bool = false) throws
    -> ImportSummary
  {
    var options = HistoryImporter.Options()
    options.batchSize = batchSize
    options.skipBadRecords = skip
    return try HistoryImporter(database: db, owner: owner, options: options).run(ByteSource.open(path: path))
  }
}

/// Every row of the three tables, every column, as text: for comparing whole files.
func contents(_ db: Database) throws -> [String] {
  var rows: [String] = []
  for (table, order) in [("Users", "id"), ("Messages", "id"), ("MessageRequests", "request_id")] {
    rows += try db.query("SELECT * FROM \(table) ORDER BY \(order)") {
      "\(table): " + $0.values.map(\.description).joined(separator: "|")
    }
  }
  return rows
}

/// A small generated history written into `db` through the import path.
func fill(_ db: Database, owner: Int64 = 1, messages: Int = 3_000, seed: UInt64 = 7) throws {
  var options = HistoryGenerator.Options(owner: owner, contacts: 12, messages: messages, seed: seed)
  options.pending = 4
  options.failed = 3
  let generator = HistoryGenerator(options)
  _ = try RecordWriter(database: db, owner: owner).write { emit in try generator.generate(emit) }
}

/// Lines of a valid plain NDJSON history for owner 1: two users, then `count` messages.
func validLines(messages count: Int) -> [String] {
  var lines = [
    #"{"type":"user","id":1,"name":"Me"}"#,
    #"{"type":"user","id":2,"name":"Zoë \"Z\" 李","avatarUrl":null}"#,
  ]
  for i in 1...max(1, count) {
    lines.append(
      #"{"type":"message","id":\#(i),"fromUserId":\#(i % 2 == 0 ? 1 : 2),"toUserId":\#(i % 2 == 0 ? 2 : 1),"content":"m\#(i) 👋","status":"READ","createdAt":"2026-01-01T00:00:00.000Z"}"#
    )
  }
  return lines
}

/// The connection settings a bulk job could change, as text: for checking that a job
/// hands its caller's connection back as it found it.
func connectionSettings(_ db: Database) throws -> [String: String] {
  var settings: [String: String] = [:]
  for name in [
    "foreign_keys", "wal_autocheckpoint", "cache_size", "synchronous", "journal_mode", "temp_store", "busy_timeout",
    "defer_foreign_keys", "recursive_triggers", "cache_spill", "query_only",
  ] {
    settings[name] = try db.query("PRAGMA \(name)") { $0.values.map(\.description).joined() }.joined()
  }
  settings["in transaction"] = "\(db.isInTransaction)"
  settings["triggers"] = "\(db.triggersEnabled)"
  settings["temp tables"] = try db.query("SELECT name FROM temp.sqlite_schema ORDER BY name") { $0.string(0) }.joined(
    separator: ",")
  return settings
}

/// Gives a connection settings other than SQLite's defaults, so a job that sets a
/// default "back" instead of restoring what was there is caught.
func unusualSettings(_ db: Database) throws {
  try db.execute("PRAGMA wal_autocheckpoint = 777")
  try db.execute("PRAGMA cache_size = -3333")
  try db.execute("PRAGMA foreign_keys = OFF")
}
