import Foundation

/// One SQLite value in one of its five storage classes.
///
/// See <https://sqlite.org/datatype3.html>.
public enum DatabaseValue: Hashable, Sendable, CustomStringConvertible {
  case null
  case integer(Int64)
  case real(Double)
  case text(String)
  case blob([UInt8])

  public var description: String {
    switch self {
    case .null: "NULL"
    case .integer(let v): String(v)
    case .real(let v): String(v)
    case .text(let v): "'\(v.replacingOccurrences(of: "'", with: "''"))'"
    case .blob(let v): "X'" + v.map { String(format: "%02X", $0) }.joined() + "'"
    }
  }
}

/// A Swift value that can be bound to a statement parameter.
public protocol DatabaseValueConvertible: Sendable {
  /// The value to bind.
  var databaseValue: DatabaseValue { get }
}

extension DatabaseValue: DatabaseValueConvertible {
  public var databaseValue: DatabaseValue { self }
}
extension Int64: DatabaseValueConvertible {
  public var databaseValue: DatabaseValue { .integer(self) }
}
extension Int: DatabaseValueConvertible {
  public var databaseValue: DatabaseValue { .integer(Int64(self)) }
}
extension Int32: DatabaseValueConvertible {
  public var databaseValue: DatabaseValue { .integer(Int64(self)) }
}
extension Double: DatabaseValueConvertible {
  public var databaseValue: DatabaseValue { .real(self) }
}
extension String: DatabaseValueConvertible {
  public var databaseValue: DatabaseValue { .text(self) }
}
extension Bool: DatabaseValueConvertible {
  public var databaseValue: DatabaseValue { .integer(self ? 1 : 0) }
}
extension Array: DatabaseValueConvertible where Element == UInt8 {
  public var databaseValue: DatabaseValue { .blob(self) }
}
extension Optional: DatabaseValueConvertible where Wrapped: DatabaseValueConvertible {
  public var databaseValue: DatabaseValue { self?.databaseValue ?? .null }
}
