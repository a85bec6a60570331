import ChatCLI
import ChatStore
import Foundation

/// `chatdb-bench search`: `ChatRepository.search` (newest 50) for a rare and a common
/// word and a CJK pair, against `LIKE '%word%'` on the same file.
enum SearchBench: ParsableCommand {
  /// Prints its own JSON line for scripts/bench, not the envelope.
  typealias Result = EmptyResult
  static let name = "search"
  static let abstract = "Time searches (newest 50) through the search index against a LIKE scan."

  struct Options: ParsableOptions {
    var file: BenchFile
    init(_ o: inout OptionReader) { file = BenchFile(&o) }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let options = options.file
    let chats = try ChatRepository(database: Database(path: options.path), ownerID: options.owner)
    let db = chats.database
    // Words from the generator's vocabulary: one in few messages, one in many.
    let vocabulary = try db.query(
      "SELECT term, doc FROM MessageSearchVocabulary WHERE NOT term GLOB '*[^a-z]*' AND length(term) >= 3 ORDER BY doc, term",
      setup:
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.MessageSearchVocabulary USING fts5vocab(main, MessageSearch, 'row')")
    guard let rare = vocabulary.first(where: { $0.1 >= 20 }), let common = vocabulary.last else {
      throw StoreError(.badInput, "\(options.path): the search index is empty")
    }
    let like = try db.prepare(
      "SELECT id, content FROM Messages WHERE content LIKE '%' || ?1 || '%' ORDER BY id DESC LIMIT 50")
    var results: [String: JSONValue] = [
      "messages": .int(try db.int64("SELECT count(*) FROM Messages") ?? 0), "repeat": .int(Int64(options.repeats)),
      "rareWord": .string(rare.0), "rareMatches": .int(rare.1), "commonWord": .string(common.0),
      "commonMatches": .int(common.1),
    ]
    for (key, word) in [("rare", rare.0), ("common", common.0), ("cjk", "你好")] {
      results[key + "Micros"] = .double(
        try ReadPathBench.median(options.repeats) { _ = try chats.search(word, limit: 50) })
      results[key + "Hits"] = .int(Int64(try chats.search(word, limit: 50).hits.count))
      let scans = max(3, options.repeats / 50)
      results[key + "LikeMicros"] = .double(try ReadPathBench.median(scans) { try like.forEachRow([word]) { _ in } })
    }
    results["rarePage2Micros"] = .double(
      try ReadPathBench.median(options.repeats) {
        let first = try chats.search(rare.0, limit: 10)
        _ = try chats.search(rare.0, before: first.older, limit: 10)
      })
    context.stdout.writeLine(JSONValue.object(results).render(pretty: false))
  }
}

extension Database {
  /// Rows of `sql` after running `setup` (a temp table it reads).
  fileprivate func query(_ sql: String, setup: String) throws -> [(String, Int64)] {
    try execute(setup)
    return try query(sql) { ($0.string(0), $0.int64(1)) }
  }
}
