import ChatStore
import Foundation

/// Copies a file's WAL into the database file on a thread of its own, with a
/// connection of its own, while the evictor goes on deleting on the other core: a
/// passive checkpoint takes no write lock, so neither waits for the other. On the
/// evictor's own thread, checkpoints took 1.4–2.1 s of an eviction of half of 1M
/// messages, a tenth of the run.
///
/// ```swift
/// let copier = try WALCopier(path: db.path)
/// copier.copy()          // returns at once; the checkpoint runs on the copier's thread
/// try copier.finish()    // waits for it, and throws what it failed with
/// ```
/// SQLite starts the WAL again from its beginning only when a write transaction begins
/// with every frame copied, which a checkpoint running beside back-to-back transactions
/// never sees: the writer asks for copies often, then, once the WAL is as long as it
/// should get, waits (`wait()`) and copies the few frames left itself.
/// See <https://sqlite.org/c3ref/wal_checkpoint_v2.html>.
final class WALCopier: @unchecked Sendable {
  // @unchecked: `asked`, `busy`, `stopping`, `running` and `failure` are only reached
  // while holding `condition`; the connection is used by the copier's thread alone.
  private let condition = NSCondition()
  private var asked = false
  private var busy = false
  private var stopping = false
  private var running = true
  private var failure: (any Error)?

  /// Opens the copier's connection to `path` (on this thread, so a failure to open is
  /// thrown here) and starts its thread.
  init(path: String) throws {
    let connection = UncheckedSendable(Connection(try Database(path: path)))
    Thread { [self] in self.loop(connection.value) }.start()
  }

  /// Asks for a checkpoint; returns at once. Asking while one runs asks for one more.
  func copy() {
    condition.lock()
    asked = true
    condition.broadcast()
    condition.unlock()
  }

  /// Waits until the checkpoints asked for are done (or the copier failed).
  func wait() {
    condition.lock()
    while (asked || busy) && running { condition.wait() }
    condition.unlock()
  }

  /// Waits for the checkpoint under way, ends the thread, closes its connection and
  /// throws the first error a checkpoint failed with.
  func finish() throws {
    condition.lock()
    stopping = true
    condition.broadcast()
    while running { condition.wait() }
    let failure = self.failure
    condition.unlock()
    if let failure { throw failure }
  }

  /// The copier's connection, closed by its thread before it ends.
  private final class Connection {
    var db: Database?
    init(_ db: Database) { self.db = db }
  }

  private func loop(_ connection: Connection) {
    if let db = connection.db { serve(db) }
    connection.db = nil
    condition.lock()
    running = false
    condition.broadcast()
    condition.unlock()
  }

  /// Checkpoints each time one is asked for, until `finish()` or a failure.
  private func serve(_ db: Database) {
    while true {
      condition.lock()
      while !asked && !stopping { condition.wait() }
      let stop = stopping
      (asked, busy) = (false, !stop)
      condition.unlock()
      if stop { return }
      var error: (any Error)?
      do {
        try db.execute("PRAGMA wal_checkpoint(PASSIVE)")
      } catch let failed {
        error = failed
      }
      condition.lock()
      busy = false
      failure = failure ?? error
      condition.broadcast()
      condition.unlock()
      if error != nil { return }
    }
  }
}
