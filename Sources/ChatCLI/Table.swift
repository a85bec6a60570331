/// Renders rows of string cells as aligned text columns with a header row and a separator.
public struct Table: Sendable {
  /// How a column's cells are aligned.
  public enum Alignment: Sendable {
    /// Pad on the right (text).
    case left
    /// Pad on the left (numbers).
    case right
  }

  /// A column: its header title and alignment (use `.right` for numbers).
  public struct Column: Sendable {
    /// The header text.
    public var title: String
    /// The alignment of the header and cells.
    public var alignment: Alignment
    /// Wrap longer cells onto more lines at word boundaries (nil: never wrap).
    public var maxWidth: Int?
    /// Creates a column.
    public init(_ title: String, alignment: Alignment = .left, maxWidth: Int? = nil) {
      self.title = title
      self.alignment = alignment
      self.maxWidth = maxWidth
    }
  }

  /// The columns, in order.
  public var columns: [Column]
  /// The rows; missing cells render empty, extra cells are ignored.
  public var rows: [[String]]
  /// The text between columns.
  public var gap = "  "

  /// Creates a table.
  public init(columns: [Column], rows: [[String]]) {
    self.columns = columns
    self.rows = rows
  }

  /// The table as text: header, a line of dashes per column, then the rows; each line ends with
  /// a newline and has no trailing spaces. Widths count East Asian wide characters as two columns.
  public func render() -> String {
    // A row whose cells wrap becomes several lines; the other columns are blank below.
    let cells = rows.flatMap { row -> [[String]] in
      let wrapped = columns.indices.map { index -> [String] in
        let cell = index < row.count ? row[index] : ""
        return columns[index].maxWidth.map { wrapCell(cell, width: $0) } ?? [cell]
      }
      let height = wrapped.map(\.count).max() ?? 1
      return (0..<height).map { line in wrapped.map { line < $0.count ? $0[line] : "" } }
    }
    var widths = columns.map { displayWidth($0.title) }
    for row in cells {
      for (index, cell) in row.enumerated() { widths[index] = max(widths[index], displayWidth(cell)) }
    }
    func line(_ row: [String]) -> String {
      var parts: [String] = []
      for (index, cell) in row.enumerated() {
        let padding = String(repeating: " ", count: widths[index] - displayWidth(cell))
        parts.append(columns[index].alignment == .right ? padding + cell : cell + padding)
      }
      var text = parts.joined(separator: gap)
      while text.last == " " { text.removeLast() }
      return text + "\n"
    }
    let separator = widths.map { String(repeating: "-", count: $0) }
    return line(columns.map(\.title)) + line(separator) + cells.map(line).joined()
  }
}

/// `text` in lines of at most `width` columns, broken between words (a word longer
/// than the width is cut).
func wrapCell(_ text: String, width: Int) -> [String] {
  guard width > 0, displayWidth(text) > width else { return [text] }
  var lines: [String] = []
  var current = ""
  for word in text.split(separator: " ", omittingEmptySubsequences: true).map(String.init) {
    var word = word
    while displayWidth(word) > width {
      if !current.isEmpty {
        lines.append(current)
        current = ""
      }
      var head = ""
      while let next = word.first, displayWidth(head + String(next)) <= width {
        head.append(next)
        word.removeFirst()
      }
      lines.append(head)
    }
    if current.isEmpty {
      current = word
    } else if displayWidth(current) + 1 + displayWidth(word) <= width {
      current += " " + word
    } else {
      lines.append(current)
      current = word
    }
  }
  if !current.isEmpty || lines.isEmpty { lines.append(current) }
  return lines
}

/// Terminal columns taken by `text`: two for East Asian wide characters and most emoji, else one
/// per grapheme cluster (an approximation of `wcwidth` that needs no locale).
func displayWidth(_ text: String) -> Int {
  var width = 0
  for character in text {
    let scalar = character.unicodeScalars.first!.value
    let wide =
      (0x1100...0x115F).contains(scalar) || (0x2E80...0xA4CF).contains(scalar)
      || (0xAC00...0xD7A3).contains(scalar) || (0xF900...0xFAFF).contains(scalar)
      || (0xFE30...0xFE4F).contains(scalar) || (0xFF00...0xFF60).contains(scalar)
      || (0xFFE0...0xFFE6).contains(scalar) || (0x1F300...0x1FAFF).contains(scalar)
      || (0x20000...0x3FFFD).contains(scalar)
    width += wide ? 2 : 1
  }
  return width
}
