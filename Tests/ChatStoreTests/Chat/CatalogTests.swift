import Foundation
import TestSupport
import Testing

@testable import ChatStore

/// The hot-query catalog holds every statement the repository runs on the chat tables,
/// and reads their rows itself.
@Suite(.ownThreads) struct CatalogTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  static func source(_ path: String) throws -> String {
    try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
  }

  static let catalogFiles = [
    "Sources/ChatStore/Chat/HotQuery.swift", "Sources/ChatStore/Chat/HotQuery+Sync.swift",
    "Sources/ChatStore/Search/HotQuery+Search.swift",
  ]
  static let repositoryFiles = [
    "Sources/ChatStore/Chat/ChatRepository.swift", "Sources/ChatStore/Chat/ChatRepository+Sync.swift",
    "Sources/ChatStore/Chat/ChatRepository+Search.swift",
  ]

  @Test func everyEntryWrittenInTheCatalogIsInAll() throws {
    let listed = Set(HotQuery.all.map(\.name))
    var written = 0
    for file in Self.catalogFiles {
      let text = try Self.source(file)
      // `HotQuery(` then its `name: "…"`; names built by interpolation come from
      // functions whose every case `all` maps (checked by the count below).
      let pattern = try NSRegularExpression(pattern: #"HotQuery\(\s*name:\s*"([^"\\]*)""#)
      for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
        let name = String(text[Range(match.range(at: 1), in: text)!])
        written += 1
        #expect(listed.contains(name), "\(file): '\(name)' is not in HotQuery.all")
      }
    }
    #expect(written > 60, "the catalog files were not read")
  }

  @Test func theRepositoryRunsNoSQLOfItsOwnAndReadsNoColumnByPosition() throws {
    let sql = try NSRegularExpression(
      pattern: #"("|^\s*)(SELECT|INSERT|UPDATE|DELETE|WITH|REPLACE)\s"#, options: [.anchorsMatchLines])
    let position = try NSRegularExpression(
      pattern: #"(row|\$0)\.(int64|int|string|double|optionalString|optionalInt64|isNull|withUTF8)\(\d"#)
    for file in Self.repositoryFiles {
      let text = try Self.source(file)
      for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
        let line = String(line)
        if line.trimmingCharacters(in: .whitespaces).hasPrefix("//") { continue }
        let range = NSRange(line.startIndex..., in: line)
        #expect(sql.firstMatch(in: line, range: range) == nil, "\(file):\(index + 1): SQL outside the catalog: \(line)")
        #expect(
          position.firstMatch(in: line, range: range) == nil,
          "\(file):\(index + 1): a column read by position outside the catalog: \(line)")
      }
    }
  }
}
