import ChatStore
import Foundation

/// One entry of `sqlite_schema` that chatdb manages: a table, index, trigger or view.
public struct SchemaObject: Sendable, Hashable {
  /// `table`, `index`, `trigger` or `view`.
  public var type: String
  public var name: String
  /// The table an index or trigger belongs to (the table itself for a table).
  public var table: String
  /// The `CREATE` statement with its whitespace collapsed (see `SchemaReference.normalise`).
  public var sql: String

  /// Creates an object from its `sqlite_schema` fields.
  public init(type: String, name: String, table: String, sql: String) {
    self.type = type
    self.name = name
    self.table = table
    self.sql = sql
  }
}

/// What a file's schema should be: a fresh in-memory database built from the shipped
/// migrations up to the file's version, compared object by object.
///
/// ```swift
/// let reference = try SchemaReference.database(version: 3)
/// let expected = try SchemaReference.objects(in: reference)
/// ```
/// See <https://sqlite.org/schematab.html>.
public enum SchemaReference {
  /// Builds a private in-memory database at `version` by applying the shipped migrations.
  public static func database(version: Int, migrations: [Migration] = Migration.shipped) throws -> Database {
    guard version >= 0 && version <= migrations.count else {
      throw StoreError(.newerSchema, "schema version \(version) is newer than this chatdb knows (\(migrations.count))")
    }
    let db = try Database(path: ":memory:")
    _ = try Migrator(migrations: migrations).apply(Array(migrations.prefix(version)), to: db, owner: nil)
    return db
  }

  /// The schema objects of `db`, without SQLite's own (`sqlite_*`, automatic indexes)
  /// and without the migrator's records table, which the migrator itself checks.
  public static func objects(in db: Database) throws -> [SchemaObject] {
    try db.query(
      """
      SELECT type, name, tbl_name, sql FROM sqlite_schema
      WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' AND name <> ?
      ORDER BY type, name
      """, [Migrator.recordsTable]
    ) { SchemaObject(type: $0.string(0), name: $0.string(1), table: $0.string(2), sql: normalise($0.string(3))) }
  }

  /// A table's columns as `name type [NOT NULL] [DEFAULT x] [PK n]`, in order, then
  /// its foreign keys: `Migrator.tableShape(_:in:)`, the same comparison the migrator
  /// makes before adopting a seed-era file, so the two never disagree.
  public static func columns(of table: String, in db: Database) throws -> [String] {
    try Migrator.tableShape(table, in: db)
  }

  /// Collapses every run of whitespace to one space and drops spaces next to
  /// parentheses and commas, so re-wrapped SQL compares equal.
  public static func normalise(_ sql: String) -> String {
    var out = ""
    var pendingSpace = false
    for character in sql {
      if character.isWhitespace {
        pendingSpace = true
        continue
      }
      if pendingSpace, let last = out.last, !"(,".contains(last), !"),".contains(character) { out.append(" ") }
      pendingSpace = false
      out.append(character)
    }
    return out
  }

  /// The version a reference is built at for the open file: its recorded version
  /// (a seed-era file is version 1), with the migrator's drift and consistency checks.
  public static func status(of db: Database) throws -> SchemaStatus {
    try Migrator().status(of: db)
  }
}

// MARK: - Comparing

/// How a file's schema differs from the reference at its version.
public struct SchemaDifference: Sendable, Hashable {
  /// What kind of difference.
  public enum Kind: String, Sendable {
    case missing, extra, different
  }

  public var kind: Kind
  public var object: SchemaObject
  /// For a different table, the columns that differ; for others, empty.
  public var detail: String

  /// `index Messages_by_conversation` or `table Messages (columns: …)`.
  public var description: String {
    "\(object.type) \(object.name)" + (detail.isEmpty ? "" : " (\(detail))")
  }
}

extension SchemaReference {
  /// Compares `db` with `reference`: objects missing from the file, extra ones, and
  /// ones with the same name but different columns (tables) or SQL (the rest).
  public static func compare(_ db: Database, with reference: Database) throws -> [SchemaDifference] {
    let found = Dictionary(try objects(in: db).map { ("\($0.type) \($0.name)", $0) }, uniquingKeysWith: { a, _ in a })
    let expected = Dictionary(
      try objects(in: reference).map { ("\($0.type) \($0.name)", $0) }, uniquingKeysWith: { a, _ in a })
    var differences: [SchemaDifference] = []
    for key in expected.keys.sorted() {
      let want = expected[key]!
      guard let have = found[key] else {
        differences.append(SchemaDifference(kind: .missing, object: want, detail: ""))
        continue
      }
      if want.type == "table" {
        let a = try columns(of: want.name, in: reference)
        let b = try columns(of: have.name, in: db)
        if a != b {
          let missing = a.filter { !b.contains($0) }.map { "missing \($0)" }
          let extra = b.filter { !a.contains($0) }.map { "extra \($0)" }
          let changes = missing + extra
          differences.append(
            SchemaDifference(
              kind: .different, object: have, detail: changes.isEmpty ? "column order" : changes.joined(separator: "; ")
            ))
        }
      } else if want.sql != have.sql {
        differences.append(SchemaDifference(kind: .different, object: have, detail: "SQL differs"))
      }
    }
    for key in found.keys.sorted() where expected[key] == nil {
      differences.append(SchemaDifference(kind: .extra, object: found[key]!, detail: ""))
    }
    return differences
  }
}
