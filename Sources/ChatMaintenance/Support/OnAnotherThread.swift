import Foundation

/// Runs a piece of work on a thread of its own, started at once; `wait()` returns its
/// result or throws its error. For two passes over a file that each keep a core busy
/// (`StorageReport`): work that shares nothing with the caller but its inputs.
final class OnAnotherThread<Value: Sendable>: @unchecked Sendable {
  private var result: Result<Value, any Error>?
  private let done = DispatchSemaphore(value: 0)

  init(_ work: @escaping @Sendable () throws -> Value) {
    // `result` is written once, before `done` is signalled, and read only after `wait()`.
    let thread = Thread { [self] in
      result = Result { try work() }
      done.signal()
    }
    thread.start()
  }

  /// Waits for the work to finish; returns its value or throws its error.
  func wait() throws -> Value {
    done.wait()
    done.signal()
    return try result!.get()
  }
}
