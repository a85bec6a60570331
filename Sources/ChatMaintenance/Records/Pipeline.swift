import Foundation

/// Runs a producer on a thread of its own and hands what it emits to the caller's
/// thread in blocks, so making records (generating text, parsing NDJSON) and writing
/// them into SQLite each keep a core busy instead of taking turns on one.
///
/// ```swift
/// try writer.write { emit in
///   try Pipeline<Record>.run({ produce in generator.generate(produce) }, into: emit)
/// }
/// ```
/// At most `maxBlocks` blocks of `blockSize` items wait between the two, so memory
/// stays flat however many there are; items that hold much (`weight`: a media piece's
/// bytes) end a block at `maxBlockWeight`. When `consume` throws, the producer is stopped
/// at its next block and the error is rethrown once its thread has ended; when the
/// producer throws, the items it emitted before arrive first, then its error.
public enum Pipeline<Item: Sendable> {
  static var blockSize: Int { 2_048 }
  static var maxBlocks: Int { 4 }
  /// The weight at which a block is handed over before it is full (4 MiB of bytes).
  static var maxBlockWeight: Int { 4 << 20 }

  /// Calls `consume` on this thread with every item `produce` emits on another, in order.
  /// `weight` is what an item holds, in bytes beyond its own size (none by default).
  public static func run(
    _ produce: @escaping @Sendable ((Item) throws -> Void) throws -> Void,
    weight: @escaping @Sendable (Item) -> Int = { _ in 0 }, into consume: (Item) throws -> Void
  ) throws {
    let channel = Channel()
    let thread = Thread {
      var block: [Item] = []
      var blockWeight = 0
      block.reserveCapacity(blockSize)
      do {
        try produce { record in
          block.append(record)
          blockWeight += weight(record)
          if block.count == blockSize || blockWeight >= maxBlockWeight {
            try channel.send(block)
            block.removeAll(keepingCapacity: true)
            blockWeight = 0
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
    private var blocks: [[Item]] = []
    private var finished = false
    private var cancelled = false
    private(set) var producerFailure: (any Error)?

    /// Producer: waits while `maxBlocks` blocks are waiting; throws once cancelled.
    func send(_ block: [Item]) throws {
      condition.lock()
      defer { condition.unlock() }
      while blocks.count >= Pipeline.maxBlocks && !cancelled { condition.wait() }
      if cancelled { throw PipelineCancelled() }
      blocks.append(block)
      condition.broadcast()
    }

    /// Producer: no more blocks (`error` when it failed).
    func finish(_ error: (any Error)?) {
      condition.lock()
      if !(error is PipelineCancelled) { producerFailure = error }
      finished = true
      condition.broadcast()
      condition.unlock()
    }

    /// Consumer: the next block, or nil once the producer finished and all were taken.
    func receive() -> [Item]? {
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

/// What the producer's `emit` throws once the consumer has failed: the producer should
/// let it pass (it is not reported).
struct PipelineCancelled: Error {}

/// A value handed to another thread that only that thread uses from then on (the
/// input stream of a pipelined import, read by its parsing thread alone until it ends).
struct UncheckedSendable<Value>: @unchecked Sendable {
  let value: Value
  init(_ value: Value) { self.value = value }
}
