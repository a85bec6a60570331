import ChatStore

/// Pragmas a bulk job sets on a connection it was handed, with the values they had,
/// so the job can put them back when it ends, whether it succeeded or failed: the
/// caller's connection behaves afterwards as it did before.
///
/// ```swift
/// var settings = ConnectionSettings(db)
/// try settings.set("foreign_keys", 0)
/// defer { try? settings.restore() }
/// ```
/// `foreign_keys` is a no-op inside a transaction, so set and restore outside one.
/// See <https://sqlite.org/pragma.html>.
struct ConnectionSettings {
  private let db: Database
  private var saved: [(name: String, value: Int64)] = []
  /// Whether triggers were on before `disableTriggers()`, when it was called.
  private var savedTriggers: Bool?

  init(_ database: Database) { db = database }

  /// Sets `PRAGMA name = value`, remembering the value it had the first time.
  mutating func set(_ name: String, _ value: Int64) throws {
    if !saved.contains(where: { $0.name == name }) {
      saved.append((name, try db.int64("PRAGMA \(name)") ?? 0))
    }
    try db.execute("PRAGMA \(name) = \(value)")
  }

  /// Turns the connection's triggers off (see `Database.setTriggersEnabled`),
  /// remembering whether they were on.
  mutating func disableTriggers() throws {
    if savedTriggers == nil { savedTriggers = db.triggersEnabled }
    try db.setTriggersEnabled(false)
  }

  /// Puts every changed pragma back, newest change first, then the triggers; tries them
  /// all and throws the first error.
  mutating func restore() throws {
    var first: (any Error)?
    if let triggers = savedTriggers {
      do { try db.setTriggersEnabled(triggers) } catch { first = error }
      savedTriggers = nil
    }
    for (name, value) in saved.reversed() {
      do { try db.execute("PRAGMA \(name) = \(value)") } catch { first = first ?? error }
    }
    saved = []
    if let first { throw first }
  }
}
