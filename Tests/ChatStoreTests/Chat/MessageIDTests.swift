import TestSupport
import Testing

@testable import ChatStore

/// `MessageID.make` covers its whole range exactly and refuses what lies outside it.
@Suite(.ownThreads) struct MessageIDTests {
  @Test(
    arguments: [
      (MessageID.epochMilliseconds, 0), (MessageID.epochMilliseconds, 65_535), (1_767_225_600_000, 7),
      (MessageID.maximumMilliseconds, 0), (MessageID.maximumMilliseconds, 65_535),
    ] as [(Int64, Int64)])
  func idsRoundTripAcrossTheRange(milliseconds: Int64, sequence: Int64) {
    let id = MessageID.make(milliseconds: milliseconds, sequence: sequence)
    #expect(id >= 0)
    #expect(MessageID.milliseconds(of: id) == milliseconds)
    #expect(id & 0xFFFF == sequence)
  }

  @Test func theLastIdIsTheLargestInt64() {
    #expect(MessageID.make(milliseconds: MessageID.maximumMilliseconds, sequence: 65_535) == Int64.max)
    #expect(Timestamp.string(milliseconds: MessageID.maximumMilliseconds).hasPrefix("6479-"))
  }

  @Test(arguments: [MessageID.maximumMilliseconds + 1, Int64.max, MessageID.epochMilliseconds - 1])
  func aTimeOutsideTheRangeStopsInsteadOfWrapping(milliseconds: Int64) async {
    #expect(!MessageID.representable.contains(milliseconds))
    await #expect(processExitsWith: .failure) { [milliseconds] in
      _ = MessageID.make(milliseconds: milliseconds)
    }
  }
}
