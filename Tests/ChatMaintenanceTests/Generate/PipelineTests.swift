import ChatStore
import Synchronization
import TestSupport
import Testing

@testable import ChatMaintenance

@Suite(.ownThreads) struct PipelineTests {
  /// Every record arrives, in order, across more blocks than the pipe holds at once.
  @Test func recordsArriveInOrder() throws {
    let options = HistoryGenerator.Options(owner: 1, contacts: 30, messages: 20_000, seed: 11)
    let generator = HistoryGenerator(options)
    var received: [Record] = []
    try Pipeline<Record>.run({ produce in try generator.generate(produce) }, into: { received.append($0) })
    #expect(received == GeneratedHistory(options).records)
  }

  /// A consumer that fails stops the producer (it is not left running or blocked) and
  /// its error comes back; the producer made at most the blocks the pipe holds beyond it.
  @Test func aFailingConsumerStopsTheProducer() throws {
    let made = Atomic<Int>(0)
    struct Stop: Error {}
    var taken = 0
    #expect(throws: Stop.self) {
      try Pipeline<Record>.run(
        { produce in
          for i in 0..<1_000_000 {
            made.add(1, ordering: .relaxed)
            try produce(.user(User(id: Int64(i), name: "u\(i)")))
          }
        },
        into: { _ in
          taken += 1
          if taken == 10 { throw Stop() }
        })
    }
    #expect(made.load(ordering: .relaxed) <= (Pipeline<Record>.maxBlocks + 3) * Pipeline<Record>.blockSize)
  }

  /// A producer's own error comes back after the records before it.
  @Test func aFailingProducerReportsItsError() throws {
    struct Broken: Error {}
    var received = 0
    #expect(throws: Broken.self) {
      try Pipeline<Record>.run(
        { produce in
          for i in 0..<5_000 { try produce(.user(User(id: Int64(i), name: "u"))) }
          throw Broken()
        }, into: { _ in received += 1 })
    }
    #expect(received == 5_000)
  }
}
