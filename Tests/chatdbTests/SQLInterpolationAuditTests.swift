import Foundation
import TestSupport
import Testing

/// No SQL is built from user data: every value a user, a file or the network supplies
/// is a bound parameter. This scans the Sources for string literals that hold SQL and
/// interpolate something, and compares what they interpolate with a reviewed list.
/// A new interpolation fails here until someone checks it is a constant (a table name,
/// a column list, a number the code computed) and adds it below.
@Suite(.ownThreads) struct SQLInterpolationAuditTests {
  /// Reviewed: each is a constant or a number, never user text.
  static let reviewed: Set<String> = [
    // Table and column names, fixed in code.
    "table", "Self.recordsTable", "messageColumns", "requestColumns", "Columns.user.list()",
    "HotQuery.Columns.message.list()",
    "live", "reference",
    "kind",
    "options", "name",
    "pragma",
    // SQL fragments built from constants (status lists, the CJK row test, filter terms with ? placeholders).
    "status.earlierStatusesSQL", "Self.cjkRows", "SearchIndexBuilder.cjkRows", "bad", "createdMs", "idMs", "lower",
    "messages.sql",
    // Media eviction: a column list and a fixed condition (MediaPlanner.columns, .evictable).
    "Self.columns", "Self.evictable", "mediaUnreferenced", "HotQuery.mediaUnreferenced",
    // Numbers the code computed (pages, versions, connection settings it saved itself).
    "pages", "value", "migration.version", "Self.foregroundCheckpointPages", "idTimeTolerance",
    // Error messages that mention SQL words, not SQL.
    "free * pageSize", "needed", "place", "into", "violationsAfter - violationsBefore",
  ]

  static var sources: URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("Sources")
  }

  @Test func everyInterpolationIntoSQLIsOnTheReviewedList() throws {
    let literal = try NSRegularExpression(pattern: #""((?:[^"\\]|\\.)*)""#)
    let keyword = try NSRegularExpression(
      pattern: #"\b(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|PRAGMA|VACUUM|ALTER|ANALYZE)\b"#)
    let interpolation = try NSRegularExpression(pattern: #"\\\(([^()]*(?:\([^()]*\))?[^()]*)\)"#)
    var found: [String: String] = [:]
    let files = FileManager.default.enumerator(atPath: Self.sources.path)!.compactMap { $0 as? String }.filter {
      $0.hasSuffix(".swift")
    }
    #expect(files.count > 50)
    for file in files {
      let text = try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8)
      for line in text.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
        let line = String(line)
        for match in literal.matches(in: line, range: NSRange(line.startIndex..., in: line)) {
          let body = (line as NSString).substring(with: match.range(at: 1))
          guard keyword.firstMatch(in: body, range: NSRange(body.startIndex..., in: body)) != nil else { continue }
          for piece in interpolation.matches(in: body, range: NSRange(body.startIndex..., in: body)) {
            found[(body as NSString).substring(with: piece.range(at: 1)), default: file] = file
          }
        }
      }
    }
    let unreviewed = found.filter { !Self.reviewed.contains($0.key) }
    #expect(unreviewed.isEmpty, "SQL built by interpolating something not reviewed: \(unreviewed)")
  }
}
