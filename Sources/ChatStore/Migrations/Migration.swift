import Foundation
import Migrations

/// One step of the schema's history: `Migrations/NNNN_name.sql`, embedded at build time.
///
/// The checksum is SHA-256 of the normalised SQL (line endings unified, trailing
/// spaces, blank lines and whole-line `--` comments removed), so re-wrapping a
/// comment is not drift but changing a statement is.
public struct Migration: Sendable, Hashable {
  /// The number that orders migrations and becomes `PRAGMA user_version`.
  public let version: Int
  /// The descriptive part of the file name, for example `initial`.
  public let name: String
  /// The file name, for example `0001_initial.sql`.
  public let fileName: String
  /// The file's SQL, as shipped.
  public let sql: String
  /// SHA-256 of the normalised SQL, in hex.
  public let checksum: String

  /// Parses `NNNN_name.sql`.
  public init(fileName: String, sql: String) throws {
    let stem = fileName.hasSuffix(".sql") ? String(fileName.dropLast(4)) : ""
    let parts = stem.split(separator: "_", maxSplits: 1)
    guard parts.count == 2, parts[0].count == 4, parts[0].allSatisfy({ $0.isASCII && $0.isNumber }),
      let version = Int(parts[0]), version > 0, !parts[1].isEmpty
    else {
      throw StoreError(.schemaMismatch, "Migrations/\(fileName): the name must look like NNNN_name.sql")
    }
    self.version = version
    self.name = String(parts[1])
    self.fileName = fileName
    self.sql = sql
    self.checksum = SHA256.hex(Array(Migration.normalise(sql).utf8))
  }

  /// The text a checksum is computed from.
  public static func normalise(_ sql: String) -> String {
    // Byte by byte: Foundation's replacingOccurrences and then Character lines cost every
    // program 2.4 ms at its start for the shipped set.
    let space = UInt8(ascii: " ")
    let tab = UInt8(ascii: "\t")
    let cr = UInt8(ascii: "\r")
    let dash = UInt8(ascii: "-")
    var out: [UInt8] = []
    out.reserveCapacity(sql.utf8.count)
    for line in sql.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
      var end = line.endIndex
      while end > line.startIndex, [space, tab, cr].contains(line[line.index(before: end)]) {
        end = line.index(before: end)
      }
      let kept = line[line.startIndex..<end]
      let content = kept.drop { $0 == space || $0 == tab }
      guard let first = content.first else { continue }
      if first == dash && content.dropFirst().first == dash { continue }
      if !out.isEmpty { out.append(UInt8(ascii: "\n")) }
      out.append(contentsOf: kept)
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// Every migration shipped in this binary, in order.
  ///
  /// The set is checked when first used: versions start at 1 and have no gaps or
  /// repeats. A broken set is a build mistake, so it stops the program with the reason.
  public static let shipped: [Migration] = {
    do {
      return try validated(EmbeddedMigrationFile.all.map { try Migration(fileName: $0.fileName, sql: $0.sql) })
    } catch {
      fatalError("the embedded migration set is invalid: \(error)")
    }
  }()

  /// Checks that `migrations` are numbered 1, 2, 3… with no gap or repeat, and sorts them.
  public static func validated(_ migrations: [Migration]) throws -> [Migration] {
    let sorted = migrations.sorted { $0.version < $1.version }
    for (index, migration) in sorted.enumerated() where migration.version != index + 1 {
      throw StoreError(
        .schemaMismatch,
        "Migrations/\(migration.fileName): expected version \(String(format: "%04d", index + 1)); versions must run 1, 2, 3… without gaps or repeats"
      )
    }
    return sorted
  }
}
