// Fuzz target `records`: the NDJSON / export reader (ByteSource, plain or zstd, then
// LineReader, then RecordParser) and ExportVerifier over the same bytes.
//
// Invariants: nothing traps; a line that parses as a record, header or trailer is
// written back by JSONLineWriter and parses to the same value; the lines LineReader
// hands out from a plain input are the input cut at "\n" (one "\r" before it dropped).

import ChatStore

@testable import ChatMaintenance

#if canImport(Glibc)
  import Glibc
#endif

private let file = ScratchFile("records.ndjson")
private let parser = RecordParser()
private let again = RecordParser()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecords(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = input(data, size)
  file.write(bytes)
  let isZstd = size >= 4 && data[0] == 0x28 && data[1] == 0xB5 && data[2] == 0x2F && data[3] == 0xFD

  // The line reader with a tiny buffer and line limit, to reach its edges.
  var lines: [[UInt8]] = []
  var tooLong = false
  do {
    let source = try ByteSource.open(path: file.path)
    let reader = LineReader(source: source, maxLineLength: 200, bufferCapacity: 16)
    while let line = try reader.nextLine({ Array($0) }) {
      lines.append(line)
      require(reader.lineNumber == lines.count, "line number \(reader.lineNumber) after \(lines.count) lines")
    }
  } catch let error as StoreError {
    require(error.kind == .badInput, "reading failed with \(error.kind): \(error)")
    tooLong = true
  } catch {
    require(false, "reading threw \(error)")
  }
  if !isZstd {
    var expected = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { line -> [UInt8] in
      line.last == 0x0D ? Array(line.dropLast()) : Array(line)
    }
    if bytes.last == 0x0A || bytes.isEmpty { expected.removeLast() }
    if tooLong {
      require(
        expected.count > lines.count && expected[lines.count].count > 200, "a line of at most 200 bytes was refused")
      require(Array(expected.prefix(lines.count)) == lines, "the lines before the long one differ")
    } else {
      require(lines == expected, "LineReader gave \(lines.count) lines, the input has \(expected.count)")
    }
  }

  // Every line through the parser, each parsed value written back and read again.
  for line in lines { roundTrip(line) }

  // The whole file as an export: verify, then the header alone.
  _ = try? ExportVerifier.verify(path: file.path)
  _ = try? ExportVerifier.header(path: file.path)
  return 0
}

private func roundTrip(_ line: [UInt8]) {
  let kind: RecordParser.Kind
  do {
    kind = try line.withUnsafeBufferPointer { try parser.parse($0) }
  } catch {
    return
  }
  var writer = JSONLineWriter()
  switch kind {
  case .user, .message, .request, .edit:
    guard let record = try? parser.record(kind) else { return }
    writer.write(record)
    let written = reparse(writer.buffer, expecting: kind)
    require((try? again.record(kind)) == record, "\(record) was written as \(written) and read back differently")
  case .header:
    guard let header = try? parser.header() else { return }
    writer.write(header)
    let written = reparse(writer.buffer, expecting: kind)
    require((try? again.header()) == header, "\(header) was written as \(written) and read back differently")
  case .trailer:
    // A count left out reads as -1 ("not given"), which is not written back.
    guard let trailer = try? parser.trailer(), trailer.users >= 0, trailer.messages >= 0, trailer.requests >= 0 else {
      return
    }
    writer.write(trailer)
    let written = reparse(writer.buffer, expecting: kind)
    require((try? again.trailer()) == trailer, "\(trailer) was written as \(written) and read back differently")
  }
}

/// Parses a line JSONLineWriter wrote (with its "\n") into `again`; it must parse.
@discardableResult
private func reparse(_ buffer: [UInt8], expecting kind: RecordParser.Kind) -> String {
  let text = String(decoding: buffer, as: UTF8.self)
  require(buffer.last == 0x0A, "a written line does not end with a newline: \(text)")
  let parsed = buffer.dropLast().withUnsafeBufferPointer { try? again.parse($0) }
  require(parsed == kind, "the written line \(text) parses as \(String(describing: parsed)), not \(kind)")
  return text
}
