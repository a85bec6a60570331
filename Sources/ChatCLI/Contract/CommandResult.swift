import ChatStore

/// A command's `result` in the JSON envelope: one `Encodable` type per command, encoded
/// by `JSONValueEncoder` (sorted keys, exact integers, `null` for a nil optional).
///
/// `example` (and `otherExamples`, for a result whose shape depends on the options) are
/// realistic values from which `docs/json.md` is generated: its field tables and example
/// JSON come from encoding them, so the reference follows the types.
public protocol CommandResult: Encodable, Sendable {
  /// A typical result.
  static var example: Self { get }
  /// Other shapes the result takes (e.g. `evict --dry-run`'s plan beside what `evict` did).
  static var otherExamples: [Self] { get }
  /// An example of the members the command adds to the envelope's `summary` (the
  /// `summary:` it passes to `CommandContext.report`), if any.
  static var summaryExample: (any Encodable & Sendable)? { get }
}

extension CommandResult {
  public static var otherExamples: [Self] { [] }
  public static var summaryExample: (any Encodable & Sendable)? { nil }
  /// `example`, then `otherExamples`.
  static var allExamples: [any CommandResult] { [example] + otherExamples }
}

/// The result of a command that has nothing to report beyond success (no JSON `result`
/// fields): encodes as `{}`.
public struct EmptyResult: CommandResult {
  public init() {}
  public static var example: EmptyResult { EmptyResult() }
}
