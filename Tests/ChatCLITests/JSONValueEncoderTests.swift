import ChatCLI
import ChatStore
import TestSupport
import Testing

/// `JSONValueEncoder`: typed results render as the hand-built `JSONValue`s did.
@Suite(.ownThreads) struct JSONValueEncoderTests {
  struct Inner: Encodable {
    var id: Int64
    var share: Double
  }
  struct Sample: Encodable {
    var name: String
    var count: Int
    var big: Int64
    var ratio: Double
    var ok: Bool
    var missing: String?
    var present: Int64?
    var items: [Inner]
    var tags: [String]
    var nested: Inner?
    var raw: JSONValue
  }

  @Test func encodesLikeTheHandBuiltValue() throws {
    let sample = Sample(
      name: "a\"b\n", count: 3, big: Int64.max, ratio: 0.1, ok: true, missing: nil, present: 7,
      items: [Inner(id: 1, share: 5)], tags: ["x"], nested: nil, raw: ["k": [1, nil]])
    let expected: JSONValue = [
      "name": "a\"b\n", "count": 3, "big": .int(Int64.max), "ratio": 0.1, "ok": true, "missing": nil, "present": 7,
      "items": [["id": 1, "share": 5.0]], "tags": ["x"], "nested": nil, "raw": ["k": [1, nil]],
    ]
    let encoded = try JSONValueEncoder().encode(sample)
    #expect(encoded == expected)
    #expect(encoded.render() == expected.render())
  }

  @Test func reportsTheOptionalMembersByPath() throws {
    let sample = Sample(
      name: "", count: 0, big: 0, ratio: 0, ok: false, missing: nil, present: nil, items: [Inner(id: 1, share: 0)],
      tags: [], nested: Inner(id: 2, share: 1), raw: nil)
    let keys = try JSONValueEncoder().encodeWithOptionalKeys(sample).optionalKeys
    #expect(keys == ["missing", "present", "nested"])
  }
}
