import Foundation

/// The one owner of a connection: every use of it runs in order on a thread of its own,
/// never on Swift's cooperative threads (GRDB's `DatabaseQueue`).
///
/// SQLite calls block: a statement can wait `busy_timeout` for another program's lock.
/// On the cooperative pool (two threads on a two-core machine) one such wait stalls
/// every task of the process. Here the wait stalls only this queue.
///
/// ```swift
/// let queue = try DatabaseQueue(path: "chats-1.db")
/// let count = try queue.read { db in try db.int64("SELECT count(*) FROM Messages") }
/// try await queue.write { db in try db.execute("DELETE FROM Messages WHERE id < ?", [cutoff]) }
/// ```
///
/// The queue is also a `SerialExecutor`: an actor that returns `unownedExecutor` runs
/// on the queue's thread, so its synchronous calls to the connection are made there
/// (`SyncEngine` does this).
public final class DatabaseQueue: SerialExecutor, @unchecked Sendable {
  // @unchecked: `database` is only reached on `worker`'s thread (`inDatabase` hops there
  // or checks it is there), one closure at a time.
  private let database: Database
  private let worker: Worker
  /// The file's path, as given.
  public let path: String

  /// Takes over `database`: from now on it is used only through this queue (or by an
  /// actor isolated to it).
  public init(_ database: Database) {
    self.database = database
    self.path = database.path
    self.worker = Worker(name: "db " + database.path)
  }

  /// Opens `path` (see `Database.init`) and owns the connection.
  public convenience init(
    path: String, mode: Database.Mode = .readWrite, busyTimeout: Int32 = Database.defaultBusyTimeout
  ) throws {
    self.init(try Database(path: path, mode: mode, busyTimeout: busyTimeout))
  }

  deinit { worker.stop() }

  /// Whether the caller runs on this queue's thread.
  public var isCurrent: Bool { worker.isCurrent }

  // MARK: - Synchronous access

  /// Runs `body` with the connection on the queue's thread and waits for it. Called on
  /// the queue's thread (from inside another `inDatabase`, or from an actor isolated to
  /// the queue) it runs at once. Never call it from Swift's cooperative threads: use the
  /// `async` forms there.
  public func inDatabase<T>(_ body: (Database) throws -> T) throws -> T {
    if worker.isCurrent { return try body(database) }
    return try withoutActuallyEscaping(body) { body in
      let outcome = Outcome<T>()
      worker.runAndWait { [database] in outcome.value = Result { try body(database) } }
      return try outcome.value!.get()
    }
  }

  /// Runs `body` in a read transaction (one snapshot) on the queue's thread.
  public func read<T>(_ body: (Database) throws -> T) throws -> T {
    try inDatabase { db in try db.read(body) }
  }

  /// Runs `body` in a write transaction (`BEGIN IMMEDIATE`) on the queue's thread.
  public func write<T>(_ body: (Database) throws -> T) throws -> T {
    try inDatabase { db in try db.write(body) }
  }

  // MARK: - Asynchronous access

  /// Runs `body` with the connection on the queue's thread; the calling task waits
  /// without holding a thread.
  public func inDatabase<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
    if worker.isCurrent { return try body(database) }
    return try await withCheckedThrowingContinuation { continuation in
      worker.submit { [database] in continuation.resume(with: Result { try body(database) }) }
    }
  }

  /// Runs `body` in a read transaction on the queue's thread.
  public func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
    try await inDatabase { db in try db.read(body) }
  }

  /// Runs `body` in a write transaction on the queue's thread.
  public func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
    try await inDatabase { db in try db.write(body) }
  }

  /// Runs one write, again and again while another program holds the file's write lock
  /// longer than `busy_timeout`, for up to `patience` seconds, pausing between tries
  /// (50 ms, doubling up to 1 s) without holding the thread. For an actor isolated to
  /// this queue (`SyncEngine`): `body` runs on the queue's thread, one transaction per
  /// try, so a retry repeats it whole. `onWait` is called once, at the first wait;
  /// `isStopping` ends the waiting early (the last error is thrown).
  public func write<T>(
    retryingBusyFor patience: Double, isStopping: () -> Bool = { false }, onWait: () -> Void = {},
    isolation: isolated (any Actor)? = #isolation, _ body: () throws -> T
  ) async throws -> T {
    precondition(worker.isCurrent, "write(retryingBusyFor:) runs on its queue's thread (an actor isolated to it)")
    let started = ContinuousClock.now
    var pause = 0.05
    var waited = false
    while true {
      do {
        return try body()
      } catch  where Self.isBusy(error) && !isStopping() && started.duration(to: .now) < .seconds(patience) {
        if !waited { onWait() }
        waited = true
        try? await Task.sleep(for: .milliseconds(Int64(pause * 1000)))
        pause = min(pause * 2, 1)
      }
    }
  }

  /// Whether `error` is another connection's lock outlasting `busy_timeout`.
  public static func isBusy(_ error: any Error) -> Bool {
    (error as? SQLiteError)?.isBusy == true || (error as? StoreError)?.kind == .busy
  }

  // MARK: - SerialExecutor

  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let executor = asUnownedSerialExecutor()
    worker.submit { job.runSynchronously(on: executor) }
  }

  public func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

  public func checkIsolated() {
    precondition(worker.isCurrent, "not on the queue's thread of \(path)")
  }
}

/// A result handed from the queue's thread to the waiting caller.
private final class Outcome<T>: @unchecked Sendable {
  // @unchecked: written on the queue's thread before `runAndWait` returns, read after.
  var value: Result<T, any Error>?
}

/// A job that lets go of its closure once it has run.
private final class JobBox: @unchecked Sendable {
  // @unchecked: set on the caller's thread before `submit`, then touched on the worker only.
  private var job: (() -> Void)?
  init(_ job: @escaping () -> Void) { self.job = job }
  func runOnce() {
    job?()
    job = nil
  }
}

/// One thread running closures in the order they were submitted.
private final class Worker: @unchecked Sendable {
  // @unchecked: `jobs` and `stopped` are reached only under `condition`'s lock.
  private let condition = NSCondition()
  private var jobs: [() -> Void] = []
  private var stopped = false
  private let thread = Locked<pthread_t?>(nil)

  init(name: String) {
    let started = DispatchSemaphore(value: 0)
    let thread = Thread { [self] in
      self.thread.withLock { $0 = pthread_self() }
      started.signal()
      loop()
    }
    thread.name = String(name.suffix(15))
    thread.start()
    started.wait()
  }

  var isCurrent: Bool {
    guard let owner = thread.withLock({ $0 }) else { return false }
    return pthread_equal(owner, pthread_self()) != 0
  }

  func submit(_ job: @escaping () -> Void) {
    condition.lock()
    jobs.append(job)
    condition.signal()
    condition.unlock()
  }

  /// Runs `job` on the thread and returns when it has run, and when the thread holds
  /// no reference to it any more: `inDatabase` passes a closure that only
  /// `withoutActuallyEscaping` let escape, and the runtime traps ("non-escaping closure
  /// has escaped") if it outlives that call. The loop keeps the submitted closure in its
  /// batch after running it, so the job is dropped from its box before `done` is signalled.
  func runAndWait(_ job: @escaping () -> Void) {
    let done = DispatchSemaphore(value: 0)
    let box = JobBox(job)
    submit {
      box.runOnce()
      done.signal()
    }
    done.wait()
  }

  /// Ends the thread once the jobs already submitted have run.
  func stop() {
    condition.lock()
    stopped = true
    condition.signal()
    condition.unlock()
  }

  private func loop() {
    while true {
      condition.lock()
      while jobs.isEmpty && !stopped { condition.wait() }
      if jobs.isEmpty {
        condition.unlock()
        return
      }
      let batch = jobs
      jobs.removeAll(keepingCapacity: true)
      condition.unlock()
      for job in batch { job() }
    }
  }
}
