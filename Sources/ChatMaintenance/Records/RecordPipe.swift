import Foundation

/// Runs a producer of records on a thread of its own and hands its records to the
/// caller's thread in blocks, so making records (generating text, say) and writing them
/// into SQLite each keep a core busy instead of taking turns on one.
///
/// ```swift
/// try writer.write { emit in
///   try RecordPipe.run({ produce in generator.generate(produce) }, into: emit)
/// }
/// ```
/// At most `maxBlocks` blocks of `blockSize` records wait between the two, so memory
/// stays flat however many records there are. When `consume` throws, the producer is
/// stopped at its next record and the error is rethrown once its thread has ended.
public enum RecordPipe {
  static let blockSize = 2_048
  static let maxBlocks = 4

  /// Calls `consume` on this thread with every record `produce` emits on another, in order.
  public static func run(
    _ produce: @escaping @Sendable ((Record) throws -> Void) throws -> Void, into consume: (Record) throws -> Void
  ) throws {
    let channel = Channel()
    let thread = Thread {
      var block: [Record] = []
      block.reserveCapacity(blockSize)
      do {
        try produce { record in
          block.append(record)
          if block.count == blockSize {
            try channel.send(block)
            block.removeAll(keepingCapacity: true)
          }
        }
        if !block.isEmpty { try channel.send(block) }
        channel.finish(nil)
      } catch {
        // The records made before the error still arrive, as they would called directly.
        if !block.isEmpty { try? channel.send(block) }
        channel.finish(error)
      }
    }
    thread.start()
    do {
      while let block = channel.receive() {
        for record in block { try consume(record) }
      }
    } catch {
      channel.cancel()
      channel.waitForProducer()
      throw error
    }
    if let failure = channel.producerFailure { throw failure }
  }

  /// The blocks between the two threads, guarded by one condition variable.
  private final class Channel: @unchecked Sendable {
    private let condition = NSCondition()
    private var blocks: [[Record]] = []
    private var finished = false
    private var cancelled = false
    private(set) var producerFailure: (any Error)?

    struct Cancelled: Error {}

    /// Producer: waits while `maxBlocks` blocks are waiting; throws once cancelled.
    func send(_ block: [Record]) throws {
      condition.lock()
      defer { condition.unlock() }
      while blocks.count >= RecordPipe.maxBlocks && !cancelled { condition.wait() }
      if cancelled { throw Cancelled() }
      blocks.append(block)
      condition.broadcast()
    }

    /// Producer: no more blocks (`error` when it failed).
    func finish(_ error: (any Error)?) {
      condition.lock()
      if !(error is Cancelled) { producerFailure = error }
      finished = true
      condition.broadcast()
      condition.unlock()
    }

    /// Consumer: the next block, or nil once the producer finished and all were taken.
    func receive() -> [Record]? {
      condition.lock()
      defer { condition.unlock() }
      while blocks.isEmpty && !finished { condition.wait() }
      guard !blocks.isEmpty else { return nil }
      condition.broadcast()
      return blocks.removeFirst()
    }

    /// Consumer: stop the producer at its next block.
    func cancel() {
      condition.lock()
      cancelled = true
      blocks.removeAll()
      condition.broadcast()
      condition.unlock()
    }

    func waitForProducer() {
      condition.lock()
      while !finished { condition.wait() }
      condition.unlock()
    }
  }
}
