import Foundation
import Testing

/// Runs a suite's tests on threads of their own (a task executor preference, SE-0417)
/// instead of Swift's cooperative pool: for suites whose tests block (a zstd level 19
/// stream, a child process or a lock to wait for, a bulk import).
///
/// Why: swift-testing runs every test, synchronous ones too, on the cooperative pool:
/// two threads on a two-core machine. A job resumed there (a socket event, an engine's
/// reply, a timer) waits behind every queued blocking test: in one `swift test` pass a
/// connect refused at once was seen to return after 209 s, and the sync client's tests
/// failed their deadlines. The rule is the product's (`DatabaseQueue`): nothing blocks
/// the cooperative pool. The suites left on it are the ones that only await.
public struct OwnThreads: SuiteTrait, TestTrait, TestScoping {
  public var isRecursive: Bool { true }

  public func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    try await withTaskExecutorPreference(TestThreads.shared) { try await function() }
  }
}

extension Trait where Self == OwnThreads {
  /// Runs the suite on `TestThreads.shared`, away from the cooperative pool.
  public static var ownThreads: OwnThreads { OwnThreads() }
}

/// A few threads running jobs in the order they come: four, so tests that wait (for a
/// child process, a lock) leave threads to tests that compute.
public final class TestThreads: TaskExecutor, @unchecked Sendable {
  // @unchecked: `jobs` is reached only under `condition`'s lock.
  public static let shared = TestThreads(count: 4)

  private let condition = NSCondition()
  private var jobs: [UnownedJob] = []

  private init(count: Int) {
    for index in 0..<count {
      let thread = Thread { [self] in run() }
      thread.name = "tests \(index)"
      thread.start()
    }
  }

  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    condition.lock()
    jobs.append(job)
    condition.signal()
    condition.unlock()
  }

  private func run() {
    while true {
      condition.lock()
      while jobs.isEmpty { condition.wait() }
      let job = jobs.removeFirst()
      condition.unlock()
      job.runSynchronously(on: asUnownedTaskExecutor())
    }
  }
}
