import ChatMaintenance
import ChatStore
import Foundation

/// Enforces the file's storage policy (`chatdb policy`) beside `chat-sync run`: when the
/// run starts, hourly, and at once when the disk holding the file falls below the
/// warning level (then at most every `lowDiskPause`), on a thread and connection of its
/// own (eviction holds the write lock a few milliseconds at a time; the engine's writes
/// wait for it as for any other writer).
final class PolicyKeeper: @unchecked Sendable {
  // @unchecked: `stopped` and `wake` are the only state shared with the thread; the
  // condition guards both.
  private let path: String
  private let log: @Sendable (String) -> Void
  private let condition = NSCondition()
  private var stopped = false
  private var thread: Thread?
  /// Signalled when the thread's loop has returned.
  private let finished = DispatchSemaphore(value: 0)

  /// Seconds between two passes with a healthy disk, and between two looks at the disk.
  static let period: Double = 3_600
  static let diskLook: Double = 60
  /// Seconds between two passes while the disk stays low.
  static let lowDiskPause: Double = 600

  init(path: String, log: @escaping @Sendable (String) -> Void) {
    self.path = path
    self.log = log
  }

  func start() {
    let thread = Thread { [self] in
      loop()
      finished.signal()
    }
    thread.name = "policy"
    self.thread = thread
    thread.start()
  }

  /// Stops the thread and waits for it: a pass under way finishes (each of its
  /// transactions removes its files before it commits), so the process never exits
  /// in the middle of one.
  func stop() {
    condition.lock()
    stopped = true
    condition.broadcast()
    condition.unlock()
    if thread != nil { finished.wait() }
  }

  /// One pass now, if the file has a policy; what it did, or nil.
  func enforceOnce(reason: String) -> StoragePolicy.Run? {
    do {
      let policy = try StoragePolicy.load(from: Database(path: path, mode: .readOnly))
      guard !policy.isEmpty else { return nil }
      let run = try policy.enforce(path: path)
      log("policy (\(reason)): \(run.summary)")
      return run
    } catch {
      log("policy: \(error)")
      return nil
    }
  }

  private func loop() {
    var lastPass = Date.distantPast
    var lowSeen = false
    while true {
      let disk = try? DiskSpace.of(FileSystem.parentFolder(of: path))
      let low = disk.map { DiskThresholds.default.level(for: $0) != .ok } ?? false
      if low && !lowSeen {
        log("disk: \(disk.map { "\($0.available)" } ?? "?") bytes free, below the warning level")
      }
      lowSeen = low
      let since = Date().timeIntervalSince(lastPass)
      if since >= Self.period || (low && since >= Self.lowDiskPause) {
        _ = enforceOnce(reason: lastPass == .distantPast ? "start" : since >= Self.period ? "hourly" : "disk low")
        lastPass = Date()
      }
      condition.lock()
      if !stopped { _ = condition.wait(until: Date().addingTimeInterval(Self.diskLook)) }
      let done = stopped
      condition.unlock()
      if done { return }
    }
  }
}
