import Foundation

/// Formats and parses byte sizes.
public enum ByteCount {
  private static let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]

  /// A human size with binary units: `0 B`, `512 B`, `1.0 KiB`, `1.2 GiB` (one decimal from KiB up).
  public static func format(_ bytes: Int64) -> String {
    let sign = bytes < 0 ? "-" : ""
    let magnitude = bytes.magnitude
    guard magnitude >= 1024 else { return "\(sign)\(magnitude) B" }
    var unit = 0
    var divisor: Double = 1024
    // Move up while the value would round to 1024.0 or more in the current unit.
    while unit < units.count - 1, (Double(magnitude) / divisor * 10).rounded() >= 10240 {
      unit += 1
      divisor *= 1024
    }
    let tenths = Int64((Double(magnitude) / divisor * 10).rounded())
    return "\(sign)\(tenths / 10).\(tenths % 10) \(units[unit])"
  }

  /// Parses `"64MiB"`, `"64M"`, `"1.5GB"`, `"1024"`, `"2 k"`: units B, K/KiB/M/MiB/G/GiB/T/TiB/P/PiB
  /// are 1024-based, KB/MB/GB/TB/PB 1000-based, case-insensitive, optional whitespace before the
  /// unit. Returns nil for junk, negative numbers, fractional bytes and overflow.
  public static func parse(_ text: String) -> Int64? {
    let trimmed = text.trimmingCharacters(in: .whitespaces)
    let number = trimmed.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
    let unit = trimmed.dropFirst(number.count).trimmingCharacters(in: .whitespaces).lowercased()
    guard !number.isEmpty, number.filter({ $0 == "." }).count <= 1, number != "." else { return nil }
    let multiplier: Int64
    switch unit {
    case "", "b": multiplier = 1
    case "k", "ki", "kib": multiplier = 1 << 10
    case "m", "mi", "mib": multiplier = 1 << 20
    case "g", "gi", "gib": multiplier = 1 << 30
    case "t", "ti", "tib": multiplier = 1 << 40
    case "p", "pi", "pib": multiplier = 1 << 50
    case "kb": multiplier = 1_000
    case "mb": multiplier = 1_000_000
    case "gb": multiplier = 1_000_000_000
    case "tb": multiplier = 1_000_000_000_000
    case "pb": multiplier = 1_000_000_000_000_000
    default: return nil
    }
    if let whole = Int64(number) {
      let (product, overflow) = whole.multipliedReportingOverflow(by: multiplier)
      return overflow ? nil : product
    }
    guard let value = Double(number) else { return nil }
    let product = (value * Double(multiplier)).rounded()
    guard multiplier > 1 || product == value, product < 9.2e18 else { return nil }
    return Int64(product)
  }
}
