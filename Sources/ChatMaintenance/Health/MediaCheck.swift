import ChatStore
import Foundation

/// The media folder against the `Media` rows (`chatdb check`, and what `chatdb vacuum`
/// cleans up): a media the file says is here whose file is missing or the wrong size
/// (or, with `full`, whose bytes do not hash to its name), downloads left part-way,
/// files no row keeps (strays: left by a kill between a row's change and its file's),
/// and rows no message or request names.
public struct MediaCheck: Sendable {
  public var database: String
  public var folder: MediaFolder

  public init(database: String) {
    self.database = database
    folder = MediaFolder(database: database)
  }

  /// What the check found.
  public struct Findings: Sendable, Equatable {
    /// Local media whose file is missing or not its recorded size.
    public var missing: [String] = []
    /// Local media whose bytes do not hash to their name (only with `full`).
    public var badHash: [String] = []
    /// Media whose download stopped part-way (`partial`).
    public var partial: [String] = []
    /// Names in the folder no local or partial row keeps.
    public var strays: [String] = []
    /// Media rows no attachment names.
    public var unreferenced: [String] = []
  }

  /// Checks the folder against the rows of the open file `db` (in the caller's read
  /// transaction); nothing for a file without media tables.
  public func run(_ db: Database, full: Bool) throws -> Findings {
    var findings = Findings()
    guard try HotQuery.hasMedia(db) else { return findings }
    var keep: Set<String> = []
    try db.prepare("SELECT sha256, size, state FROM Media WHERE state IN ('local', 'partial')").forEachRow { row in
      let sha256 = row.string(0)
      if row.string(2) == "partial" {
        findings.partial.append(sha256)
        keep.insert(sha256 + ".part")
        // A download that finished just before its row changed keeps its file too.
        keep.insert(sha256)
        return
      }
      keep.insert(sha256)
      let file = folder.file(sha256)
      guard FileSystem.size(atPath: file) == row.int64(1) else {
        findings.missing.append(sha256)
        return
      }
      if full, let digest = SHA256.digest(ofFile: file, length: row.int64(1)), SHA256.hex(digest: digest) != sha256 {
        findings.badHash.append(sha256)
      }
    }
    // A copy into the folder under way (`.incoming-*`, younger than an hour) is not a stray.
    let now = Date().timeIntervalSince1970
    findings.strays = try folder.names().filter { name in
      guard !keep.contains(name) else { return false }
      guard name.hasPrefix(".incoming-"), let at = FileSystem.modifiedAt(FileSystem.joinPath(folder.path, name)) else {
        return true
      }
      return now - at >= 3_600
    }.sorted()
    findings.unreferenced = try db.query(
      """
      SELECT sha256 FROM Media m WHERE \(HotQuery.mediaUnreferenced)
      """, []
    ) { $0.string(0) }
    return findings
  }

  /// Removes the strays and the rows no attachment names (with their files): what
  /// `chatdb vacuum` does beside the database. The names removed, and their bytes.
  public func clean(_ db: Database) throws -> (names: [String], bytes: Int64) {
    guard try HotQuery.hasMedia(db) else { return ([], 0) }
    // All in one write transaction: a send names its files in its own (`StagedMedia`), so
    // none of them is taken for a stray; a copy not named yet is `.incoming-*` and young.
    return try db.write { db in
      var removed = try db.query(
        """
        DELETE FROM Media AS m WHERE \(HotQuery.mediaUnreferenced) RETURNING sha256
        """, []
      ) { $0.string(0) }
      var bytes = removed.reduce(Int64(0)) { $0 + folder.remove($1) }
      for name in try run(db, full: false).strays {
        let path = FileSystem.joinPath(folder.path, name)
        let size = FileSystem.size(atPath: path) ?? 0
        if unlink(path) == 0 {
          bytes += size
          removed.append(name)
        }
      }
      return (removed, bytes)
    }
  }
}

extension HealthCheck {
  /// The media checks (`MediaCheck`): `media-missing`, `media-bad-hash`, `media-partial`,
  /// `media-stray-file`, `media-unreferenced`.
  func checkMedia(_ db: Database, into report: inout HealthReport) throws {
    let found = try MediaCheck(database: db.path).run(db, full: full)
    func add(_ check: String, _ severity: HealthFinding.Severity, _ items: [String], _ what: String) {
      guard !items.isEmpty else { return }
      report.findings.append(
        HealthFinding(
          check: check, severity: severity, count: Int64(items.count),
          detail: what + ": " + Self.list(items.map { String($0.prefix(16)) })))
    }
    add(
      "media-missing", .error, found.missing,
      "media the file keeps whose file is missing or cut short ('chat-sync fetch' downloads it again)")
    add("media-bad-hash", .error, found.badHash, "media files whose bytes do not match their SHA-256")
    add("media-partial", .warning, found.partial, "downloads stopped part-way ('chat-sync run' resumes them)")
    add(
      "media-stray-file", .warning, found.strays,
      "files in the media folder no media row keeps ('chatdb vacuum' removes them)")
    add("media-unreferenced", .warning, found.unreferenced, "media no message names ('chatdb vacuum' deletes them)")
  }
}
