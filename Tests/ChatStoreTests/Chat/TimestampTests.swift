import Foundation
import TestSupport
import Testing

@testable import ChatStore

@Suite(.ownThreads) struct TimestampTests {
  @Test(arguments: [
    ("2025-12-31T10:00:00.1234Z", "2025-12-31T10:00:00.123Z"),
    ("2025-12-31T10:00:00.1Z", "2025-12-31T10:00:00.100Z"),
    ("2025-12-31T10:00:00Z", "2025-12-31T10:00:00.000Z"),
    ("2024-02-29", "2024-02-29T00:00:00.000Z"),
  ])
  func parsesAndFormats(text: String, stored: String) throws {
    let ms = try #require(Timestamp.milliseconds(from: text))
    #expect(Timestamp.string(milliseconds: ms) == stored)
  }

  @Test(arguments: [
    "2025-02-30", "2025-02-29T00:00:00Z", "2025-04-31", "0000-01-01", "2025-13-01", "2025-12-31T24:00:00Z",
    "2025-12-31T10:00:00.Z", "yesterday",
  ])
  func rejectsImpossibleDates(text: String) {
    #expect(Timestamp.milliseconds(from: text) == nil)
  }

  @Test func timesBeyondFourDigitYearsAreClamped() {
    #expect(Timestamp.string(milliseconds: Int64.min) == "0001-01-01T00:00:00.000Z")
    #expect(Timestamp.string(milliseconds: Int64.max) == "9999-12-31T23:59:59.999Z")
  }
}
