import ChatStore

/// A socket's frames, taken in batches: a task off the engine's thread moves each frame
/// of the socket's stream in as it arrives, and the engine takes everything that came
/// while it was storing the last batch. A burst (a batch of 100 messages, their
/// receipts) is then stored in one transaction instead of one each: taken one at a
/// time, every frame is a hop onto the engine's thread, and each was handled alone.
final class Mailbox: Sendable {
  private struct State: ~Copyable {
    var frames: [String] = []
    var finished = false
    var waiter: CheckedContinuation<[String]?, Never>?
  }
  private let state = Locked(State())

  /// Starts moving `frames` in; the mailbox finishes with them.
  init(_ frames: AsyncStream<String>) {
    Task.detached { [self] in
      for await text in frames { put(text) }
      finish()
    }
  }

  private func put(_ text: String) {
    let waiter = state.withLock { state -> CheckedContinuation<[String]?, Never>? in
      guard let waiter = state.waiter else {
        state.frames.append(text)
        return nil
      }
      state.waiter = nil
      return waiter
    }
    waiter?.resume(returning: [text])
  }

  /// Ends `take()` once what is in the mailbox was taken (the socket closed, or the
  /// reader was cancelled).
  func finish() {
    let waiter = state.withLock { state -> CheckedContinuation<[String]?, Never>? in
      state.finished = true
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume(returning: nil)
  }

  /// Every frame that arrived since the last call, in order, waiting for one if there is
  /// none; nil once finished and empty.
  func take() async -> [String]? {
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<[String]?, Never>) in
        let ready = state.withLock { state -> [String]?? in
          if !state.frames.isEmpty {
            defer { state.frames = [] }
            return .some(state.frames)
          }
          if state.finished { return .some(nil) }
          state.waiter = continuation
          return nil
        }
        if let ready { continuation.resume(returning: ready) }
      }
    } onCancel: {
      finish()
    }
  }
}
