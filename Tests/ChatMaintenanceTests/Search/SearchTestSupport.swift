import ChatStore

enum SearchTestSupport {
  /// An FTS5 read on each search table: closes the read handle SQLite 3.40's FTS5 keeps
  /// open after a failed autocommit statement that wrote it (see the property test).
  static func releaseSearchReaders(_ db: Database) throws {
    for table in ["MessageSearch", "MessageSearchCJK", "RequestSearch"] {
      _ = try db.int64("SELECT count(*) FROM \(table) WHERE \(table) MATCH 'chatdbnothing'")
    }
  }
}
