import ChatCLI
import ChatStore
import Foundation

/// `--db`, `--owner`, `--repeat`: the file a bench reads and how often it measures.
struct BenchFile {
  var path: String
  var owner: Int64
  var repeats: Int
  init(_ o: inout OptionReader) {
    path =
      o.option("--db", valueName: "path", help: "The database (at the latest schema) to read.", required: true) ?? ""
    owner = o.option("--owner", valueName: "id", help: "The file's owner.", required: true, parse: Parse.userID) ?? 0
    repeats =
      o.option(
        "--repeat", valueName: "n", help: "Runs per measurement; the median is reported (default 200).",
        parse: Parse.count(from: 1, to: 1_000_000)) ?? 200
  }
}

/// `chatdb-bench reads`: the conversation screen and chat list on a big file, against
/// the queries a naive schema would run.
enum ReadPathBench: ParsableCommand {
  /// Prints its own JSON line for scripts/bench, not the envelope.
  typealias Result = EmptyResult
  static let name = "reads"
  static let abstract = "Time timeline pages (newest and deep), the conversation list and unread counts."

  struct Options: ParsableOptions {
    var file: BenchFile
    var depth: Int
    init(_ o: inout OptionReader) {
      file = BenchFile(&o)
      depth =
        o.option(
          "--depth", valueName: "n", help: "How many messages deep the deep page starts (default 10000).",
          parse: Parse.count) ?? 10_000
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let (path, owner, repeats, depth) = (options.file.path, options.file.owner, options.file.repeats, options.depth)
    let chats = try ChatRepository(database: Database(path: path), ownerID: owner)
    let db = chats.database

    // The busiest conversation, and the cursor `depth` messages from its newest end.
    guard
      let busiest = try db.int64(
        "SELECT conversation_id FROM Messages GROUP BY conversation_id ORDER BY count(*) DESC LIMIT 1"),
      let deepID = try db.int64(
        "SELECT id FROM Messages WHERE conversation_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?", [busiest, depth])
    else { throw StoreError(.badInput, "\(path): no conversation holds \(depth) messages") }
    let size = try db.int64("SELECT count(*) FROM Messages WHERE conversation_id = ?", [busiest]) ?? 0

    var results: [String: JSONValue] = [
      "conversation": .int(busiest), "conversationMessages": .int(size), "depth": .int(Int64(depth)),
      "repeat": .int(Int64(repeats)),
    ]
    // The chat list's first page and its anchor, the newest timeline page, timed
    // alternately: a busy moment of the machine slows both alike.
    let (listPage, timelinePage) = try medians(repeats) {
      _ = try chats.conversations(limit: 50)
    } and: {
      _ = try chats.timeline(conversation: busiest, limit: 50)
    }
    results["conversationList50Micros"] = .double(listPage)
    results["timelineNewestMicros"] = .double(timelinePage)
    results["timelineDeepMicros"] = .double(
      try median(repeats) { _ = try chats.timeline(conversation: busiest, before: .message(id: deepID), limit: 50) })
    results["contacts"] = .int(try db.int64("SELECT count(*) FROM ConversationSummaries") ?? 0)
    results["conversationList100Micros"] = .double(try median(repeats) { _ = try chats.conversations(limit: 100) })
    results["conversationListAllMicros"] = .double(
      try median(max(5, repeats / 20)) { _ = try chats.conversations(limit: 1_000_000) })
    // The same first page computed from the tables, as before the summaries (migration
    // 0004): every contact's newest message, request and unread count, then a sort.
    let fromTables = try db.prepare(HotQuery.conversationListFromTables.sql)
    results["conversationListFromTables50Micros"] = .double(
      try median(max(5, repeats / 20)) { try db.read { _ in try fromTables.forEachRow([50]) { _ in } } })
    results["unreadCountMicros"] = .double(try median(repeats) { _ = try chats.unreadCount(conversation: busiest) })

    // What a file without the conversation key would do (seed schema as written), and
    // OFFSET paging: the reasons for the keyset design.
    let naive = try db.prepare(
      """
      SELECT id, content FROM Messages
      WHERE (to_user_id = ?1 AND from_user_id = ?2) OR (to_user_id = ?2 AND from_user_id = ?1)
      ORDER BY id DESC LIMIT 50
      """)
    results["naiveOrPageMicros"] = .double(
      try median(max(3, repeats / 50)) { try naive.forEachRow([busiest, owner]) { _ in } })
    // The quietest conversation: the OR query walks most of the table to fill a page.
    let quietest =
      try db.int64("SELECT conversation_id FROM Messages GROUP BY conversation_id ORDER BY count(*) LIMIT 1") ?? busiest
    results["quietMessages"] = .int(
      try db.int64("SELECT count(*) FROM Messages WHERE conversation_id = ?", [quietest]) ?? 0)
    results["timelineQuietMicros"] = .double(
      try median(repeats) { _ = try chats.timeline(conversation: quietest, limit: 50) })
    results["naiveOrQuietMicros"] = .double(try median(3) { try naive.forEachRow([quietest, owner]) { _ in } })
    let offset = try db.prepare(
      "SELECT id, content FROM Messages WHERE conversation_id = ? ORDER BY id DESC LIMIT 50 OFFSET ?")
    results["offsetDeepPageMicros"] = .double(try median(repeats) { try offset.forEachRow([busiest, depth]) { _ in } })
    // One compact line for scripts/bench (not the envelope: this is not a user tool).
    context.stdout.writeLine(JSONValue.object(results).render(pretty: false))
  }

  /// The median wall times of `a` and `b` over `runs` runs each, alternating, in
  /// microseconds (after one warm-up of each).
  static func medians(_ runs: Int, _ a: () throws -> Void, and b: () throws -> Void) throws -> (Double, Double) {
    try a()
    try b()
    var times: ([Double], [Double]) = ([], [])
    for _ in 0..<runs {
      var start = DispatchTime.now().uptimeNanoseconds
      try a()
      times.0.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
      start = DispatchTime.now().uptimeNanoseconds
      try b()
      times.1.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
    }
    func median(_ values: [Double]) -> Double { (values.sorted()[values.count / 2] * 10).rounded() / 10 }
    return (median(times.0), median(times.1))
  }

  /// The median wall time of `body` over `runs` runs, in microseconds (after one warm-up).
  static func median(_ runs: Int, _ body: () throws -> Void) throws -> Double {
    try body()
    var times: [Double] = []
    for _ in 0..<runs {
      let start = DispatchTime.now().uptimeNanoseconds
      try body()
      times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
    }
    times.sort()
    return (times[times.count / 2] * 10).rounded() / 10
  }
}
