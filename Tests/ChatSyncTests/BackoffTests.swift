import Testing

@testable import ChatSync

@Suite struct BackoffTests {
  @Test func theCeilingDoublesUpToTheCap() {
    let backoff = Backoff(base: 1, cap: 30, jitter: .none)
    #expect((1...7).map { backoff.ceiling(attempt: $0) } == [1, 2, 4, 8, 16, 30, 30])
    #expect(backoff.ceiling(attempt: 10_000) == 30)
    #expect(backoff.ceiling(attempt: 0) == 1)
  }

  @Test func fullJitterStaysBetweenZeroAndTheCeiling() {
    let backoff = Backoff.outbox
    for attempt in 1...20 {
      #expect(backoff.delay(attempt: attempt, random: { 0 }) == 0)
      #expect(backoff.delay(attempt: attempt, random: { 0.999_999 }) <= backoff.ceiling(attempt: attempt))
      for _ in 0..<200 {
        let delay = backoff.delay(attempt: attempt)
        #expect(delay >= 0 && delay <= backoff.ceiling(attempt: attempt))
      }
    }
    #expect(backoff.ceiling(attempt: 20) == 60 && backoff.ceiling(attempt: 1) == 0.1)
  }

  @Test func reconnectsStayWithinFiftyPercentOfTheSchedule() {
    let backoff = Backoff.reconnect
    #expect(backoff.delay(attempt: 1, random: { 0 }) == 0.5)
    #expect(backoff.delay(attempt: 1, random: { 1 }) == 1.5)
    #expect(backoff.delay(attempt: 9, random: { 0 }) == 15)
    #expect(backoff.delay(attempt: 9, random: { 1 }) == 45)
    var seen: Set<Int> = []
    for _ in 0..<500 {
      let delay = backoff.delay(attempt: 3)
      #expect(delay >= 2 && delay <= 6)
      seen.insert(Int(delay * 10))
    }
    #expect(seen.count > 20, "jitter spreads the delays")
  }
}
