import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatMaintenance

/// Inputs the `records` fuzz target (Fuzz/Records.swift) found crashing, kept as tests.
@Suite(.ownThreads) struct RecordFuzzFindings {
  static let header =
    #"{"type":"header","format":"chatdb-history","version":1,"schemaVersion":3,"userId":1,"exportedAt":"x","filters":{}}"#
  /// Counts that each fit an Int64 but whose sum does not: `HistoryTrailer.total` trapped.
  static let overflowingTrailer = #"{"type":"trailer","users":9223372036854775807,"messages":1,"requests":0}"#

  @Test func aTrailerWhoseCountsOverflowIsABadLine() throws {
    let parser = RecordParser()
    let kind = try Array(Self.overflowingTrailer.utf8).withUnsafeBufferPointer { try parser.parse($0) }
    #expect(kind == .trailer)
    #expect(throws: RecordError.self) { _ = try parser.trailer() }
  }

  @Test func verifyRefusesATrailerWhoseCountsOverflow() throws {
    let folder = try HistoryFolder()
    let path = try folder.write("overflow.ndjson", lines: [Self.header, Self.overflowingTrailer])
    do {
      _ = try ExportVerifier.verify(path: path)
      Issue.record("no error")
    } catch let error as StoreError {
      #expect(error.kind == .badInput)
      #expect(error.message.hasPrefix(path + ":2: the trailer's counts add up"), "\(error.message)")
    }
  }

  @Test func importRefusesATrailerWhoseCountsOverflow() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    let path = try folder.write("overflow.ndjson", lines: Array(validLines(messages: 2)) + [Self.overflowingTrailer])
    do {
      try folder.importFile(path, into: db)
      Issue.record("no error")
    } catch let error as ImportError {
      #expect(error.message.contains("the trailer's counts add up"), "\(error.message)")
    }
  }
}
