import ChatProtocol
import ChatStore

// MARK: - The POST /v2/messages body without JSONDecoder, when it is plain

extension MessagePost {
  /// The body when it is one plain JSON object of the four fields (integers in plain
  /// digits, strings, `createdAt` also `null`), each at most once (`PlainJSONCursor`
  /// refuses a key given twice), else nil: anything
  /// else, valid or not, goes to `JSONDecoder`, which gives the same value or the 400
  /// naming the field. In the bench's `perf` profile `JSONDecoder` was 8% of the relay's
  /// CPU (about 12 µs a message); this parser is 1.5% (about 2 µs).
  static func parsePlain(_ bytes: [UInt8]) -> Self? {
    bytes.withUnsafeBufferPointer { buffer in
      var cursor = PlainJSONCursor(bytes: buffer)
      guard let post = parsePlain(&cursor), cursor.atEnd else { return nil }
      return post
    }
  }

  /// One plain message object at the cursor (see ``parsePlain(_:)``), or nil.
  static func parsePlain(_ cursor: inout PlainJSONCursor) -> Self? {
    var requestId: Int64?
    var toUserId: Int64?
    var content: String?
    var createdAt: String??
    let read = cursor.object { key, cursor in
      if PlainJSONCursor.matches(key, "requestId") {
        requestId = cursor.integer()
        return requestId != nil
      } else if PlainJSONCursor.matches(key, "toUserId") {
        toUserId = cursor.integer()
        return toUserId != nil
      } else if PlainJSONCursor.matches(key, "content") {
        content = cursor.string()
        return content != nil
      } else if PlainJSONCursor.matches(key, "createdAt") {
        if cursor.takeNull() {
          createdAt = .some(nil)
          return true
        }
        guard let value = cursor.string() else { return false }
        createdAt = .some(value)
        return true
      }
      return false
    }
    guard read, let requestId, let toUserId, let content else { return nil }
    return MessagePost(requestId: requestId, toUserId: toUserId, content: content, createdAt: createdAt ?? nil)
  }
}

extension MessageBatchPost {
  /// The batch body when it is one plain object of `messages` (an array of plain message
  /// objects, as ``MessagePost/parsePlain(_:)`` reads them) and `after` (an integer or
  /// `null`), each at most once, else nil for `JSONDecoder`. A sender's backlog posts
  /// every message in a batch: decoding them with `JSONDecoder` was 4% of the relay's CPU.
  static func parsePlain(_ bytes: [UInt8]) -> Self? {
    bytes.withUnsafeBufferPointer { buffer in
      var cursor = PlainJSONCursor(bytes: buffer)
      var messages: [MessagePost]?
      var after: Int64??
      let read = cursor.object { key, cursor in
        if PlainJSONCursor.matches(key, "messages") {
          var list: [MessagePost] = []
          let listed = cursor.array { cursor in
            guard let post = MessagePost.parsePlain(&cursor) else { return false }
            list.append(post)
            return true
          }
          messages = list
          return listed
        } else if PlainJSONCursor.matches(key, "after") {
          if cursor.takeNull() {
            after = .some(nil)
            return true
          }
          guard let value = cursor.integer() else { return false }
          after = .some(value)
          return true
        }
        return false
      }
      guard read, cursor.atEnd, let messages else { return nil }
      return MessageBatchPost(messages: messages, after: after ?? nil)
    }
  }
}
