import ChatStore

/// Wakes a waiting loop: `ring()` from anywhere, `wait(timeout:)` in the loop. A ring
/// while nobody waits is kept (one), so a wake-up is never lost.
final class Doorbell: Sendable {
  private struct State: ~Copyable {
    var rung = false
    var waiter: CheckedContinuation<Void, Never>?
  }
  private let state = Locked(State())

  func ring() {
    let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
      if let waiter = state.waiter {
        state.waiter = nil
        return waiter
      }
      state.rung = true
      return nil
    }
    waiter?.resume()
  }

  /// Returns after a ring, or after `timeout` seconds (nil: only a ring).
  func wait(timeout: Double?) async {
    let timer = timeout.map { seconds in
      Task { [self] in
        try? await Task.sleep(for: .milliseconds(Int64(max(0, seconds) * 1000) + 1))
        if !Task.isCancelled { ring() }
      }
    }
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let now = state.withLock { state -> Bool in
        if state.rung {
          state.rung = false
          return true
        }
        state.waiter = continuation
        return false
      }
      if now { continuation.resume() }
    }
    timer?.cancel()
  }
}
