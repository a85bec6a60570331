import ChatStore
import TestSupport
import Testing

@testable import ChatRelay

/// Every by-key statement of `RelayQuery` reaches its rows by an index or a primary
/// key: a `SCAN` in its plan would make the relay slow down as relay.db grows.
@Suite(.ownThreads) struct RelayQueryPlanTests {
  @Test(arguments: RelayQuery.all.map(\.name))
  func planUsesAnIndex(_ name: String) throws {
    let sql = try #require(RelayQuery.all.first { $0.name == name }?.sql)
    try withRelay { store, _, _ in
      let statement = try store.db.prepare("EXPLAIN QUERY PLAN " + sql)
      let arguments: [any DatabaseValueConvertible] = Array(repeating: Int64(1), count: statement.parameterCount)
      let details = try statement.map(arguments) { $0.string(3) }
      #expect(!details.isEmpty)
      // `SCAN CONSTANT ROW` is the one-row SELECT around an EXISTS: no table is read.
      for detail in details where detail.hasPrefix("SCAN") && detail != "SCAN CONSTANT ROW" {
        Issue.record("\(name): \(detail)")
      }
      #expect(!details.contains { $0.contains("USE TEMP B-TREE") }, "\(name) sorts: \(details)")
    }
  }
}
