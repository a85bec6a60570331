/// A migration recorded as applied in a file's `chatdb_migrations` table.
public struct AppliedMigration: Sendable, Hashable {
  public var version: Int
  public var name: String
  public var checksum: String
  /// When it ran (ISO 8601, UTC), or `baseline` for a seed-era file adopted as version 1.
  public var appliedAt: String
}

/// An applied migration whose recorded name or checksum differs from the shipped file.
public struct MigrationDrift: Sendable, Hashable, CustomStringConvertible {
  public var version: Int
  public var recordedName: String
  public var recordedChecksum: String
  public var shippedName: String
  public var shippedChecksum: String

  public var description: String {
    let number = String(repeating: "0", count: max(0, 4 - String(version).count)) + String(version)
    return "migration \(number)_\(recordedName) was applied with checksum \(recordedChecksum.prefix(12)) "
      + "but \(number)_\(shippedName).sql is \(shippedChecksum.prefix(12))"
  }
}

/// Where a file stands against the migrations this binary ships.
public struct SchemaStatus: Sendable {
  /// The file's path.
  public var path: String
  /// Whether the file exists (a missing file is version 0).
  public var exists: Bool
  /// The file's schema version: `PRAGMA user_version`, or 1 for a seed-era file.
  public var version: Int
  /// The newest version this binary knows.
  public var latestVersion: Int
  /// Migrations recorded in the file.
  public var applied: [AppliedMigration]
  /// Shipped migrations not yet applied (empty when the file is newer).
  public var pending: [Migration]
  /// Applied migrations that differ from the shipped ones.
  public var drift: [MigrationDrift]
  /// True for a file made by the seed's app: the three tables, no migration records.
  public var isSeedFile: Bool
  /// The file plus its `-wal`, in bytes (`FileSystem.databaseSize`).
  public var fileSize: Int64

  /// Whether the file was written by a newer chatdb.
  public var isNewer: Bool { version > latestVersion }
  /// Whether the file is at the latest version with no drift.
  public var isCurrent: Bool { exists && version == latestVersion && drift.isEmpty }
}
