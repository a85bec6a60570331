import ChatStore
import Foundation

/// What `chatdb evict` removes. Policies combine:
///
/// - `conversations` narrows everything to those conversations; alone it removes them
///   whole.
/// - `olderThan` removes messages created before `now - olderThan`.
/// - `maxSize` then removes the oldest remaining messages (by id, across
///   conversations) until the file fits; with `leastRecent`, whole conversations,
///   least recently active first, instead.
/// - `keepLast` protects the newest N messages of every conversation from all of it.
///
/// - `mediaOlderThan`, `mediaLargerThan` and `mediaMaxSize` remove media files (the
///   messages and their thumbnails stay); `mediaOnly` does that to the media of the
///   messages the other criteria select instead of deleting them. Deleting messages
///   deletes the media no other message keeps.
///
/// Outbox requests (`MessageRequests`) and users are never touched, nor the media of a
/// message still in the outbox.
///
/// ```swift
/// var policy = EvictionPolicy()
/// policy.olderThan = try EvictionPolicy.age("180d")
/// policy.keepLast = 20
/// ```
public struct EvictionPolicy: Sendable, Equatable {
  /// Remove messages older than this many milliseconds before `now`.
  public var olderThan: Int64?
  /// The database file's size (bytes, after reclaiming) to get under.
  public var maxSize: Int64?
  /// Only these conversations (the other user's ids); empty means all.
  public var conversations: [Int64] = []
  /// Never leave a conversation with fewer than this many messages.
  public var keepLast: Int = 0
  /// With `maxSize`: remove whole conversations, least recently active first.
  public var leastRecent = false
  /// Purge the edit history (`MessageEdits`: the versions edits replaced) made more than
  /// this many milliseconds before `now`; the messages keep their latest text.
  public var editHistoryOlderThan: Int64?
  /// Remove the files of media last accessed more than this many milliseconds before
  /// `now` (their messages and thumbnails stay; the media becomes `evicted`).
  public var mediaOlderThan: Int64?
  /// Remove media files, least recently accessed first, until those left total at most
  /// this many bytes.
  public var mediaMaxSize: Int64?
  /// Remove the files of media larger than this many bytes.
  public var mediaLargerThan: Int64?
  /// Keep the messages the other criteria select and remove their media's files instead.
  public var mediaOnly = false
  /// The time ages are measured from (injectable so runs repeat).
  public var now: Date = Date()

  public init() {}

  /// Whether the policy selects anything at all.
  public var isEmpty: Bool {
    olderThan == nil && maxSize == nil && conversations.isEmpty && editHistoryOlderThan == nil && !evictsMedia
  }

  /// Whether the policy names media (`--media-*`).
  public var evictsMedia: Bool { mediaOlderThan != nil || mediaMaxSize != nil || mediaLargerThan != nil }

  /// Whether the policy deletes messages (not only edit history or media files).
  public var deletesMessages: Bool { !mediaOnly && (olderThan != nil || maxSize != nil || !conversations.isEmpty) }

  /// The edit history's cutoff as stored text: versions made strictly before it go.
  public var editHistoryCutoff: String? {
    editHistoryOlderThan.map {
      Timestamp.string(milliseconds: Int64((now.timeIntervalSince1970 * 1000).rounded(.down)) - $0)
    }
  }

  /// The cutoff time as stored text: messages created strictly before it are old.
  public var cutoff: String? {
    olderThan.map { Timestamp.string(milliseconds: Int64((now.timeIntervalSince1970 * 1000).rounded(.down)) - $0) }
  }

  /// Parses an age: a whole number and a unit, `h` (hours), `d` (days), `w` (weeks) or
  /// `y` (365 days): `12h`, `90d`, `6w`, `1y`. Returns milliseconds, or nil.
  public static func age(_ text: String) -> Int64? {
    guard let unit = text.last, let n = Int64(text.dropLast()), n >= 0, text.dropLast().allSatisfy(\.isASCII) else {
      return nil
    }
    let hour: Int64 = 3_600_000
    let multiplier: Int64
    switch unit {
    case "h": multiplier = hour
    case "d": multiplier = 24 * hour
    case "w": multiplier = 7 * 24 * hour
    case "y": multiplier = 365 * 24 * hour
    default: return nil
    }
    let (product, overflow) = n.multipliedReportingOverflow(by: multiplier)
    return overflow ? nil : product
  }
}
