import ChatProtocol
import ChatStore
import Foundation

/// Media (docs/protocol.md, "Media"): a request's files uploaded before it is posted,
/// and received media downloaded, one at a time, as `Media.state` asks (`partial`:
/// wanted here). Both resume after a kill: an upload from the relay's offset (its URL is
/// kept in the file), a download from its partial file.
extension SyncEngine {
  var transfer: MediaTransfer { MediaTransfer(http: api.http, chunkSize: options.mediaChunkSize) }

  /// Uploads what the relay lacks of `request`'s media; the attachments as its post
  /// carries them, or nil when an upload failed: the request is then settled as a failed
  /// post would be (tried again with the outbox's backoff, or failed for good when the
  /// relay refuses the file, with its reason for `chat-sync status`).
  func uploadAttachments(of request: MessageRequest) async -> [AttachmentPost]? {
    let attachments: [(attachment: Attachment, mediaID: Int64)]
    do {
      attachments = try repository.attachments(ofRequest: request.requestID)
    } catch {
      log("outbox: \(error)")
      return nil
    }
    var posts: [AttachmentPost] = []
    for (attachment, mediaID) in attachments {
      var relayID = attachment.relayID
      let progress = TransferProgress(
        total: attachment.size, what: "upload of \(attachment.sha256.prefix(12))", log: options.log)
      do {
        // A media the relay had once (sent or received before) may have expired there since.
        if let known = relayID, try await !transfer.has(media: known) { relayID = nil }
        if relayID == nil {
          relayID = try await upload(attachment, mediaID: mediaID, for: request.requestID, progress: progress)
        }
      } catch {
        // A failure after the relay took more of the file is not an attempt that failed:
        // a large file on a link that drops would run out of attempts while it advances.
        let outcome: RelayAPI.PostOutcome =
          error.neverConnected || (error.retryable && progress.advanced)
          ? .unreachable(error.description)
          : error.retryable ? .retryable(error.description, retryAfter: nil) : .rejected(error.description)
        await settle(request, outcome, retryAt: nil)
        return nil
      }
      posts.append(
        AttachmentPost(
          mediaId: relayID ?? 0, width: attachment.width, height: attachment.height, durationMs: attachment.durationMs,
          thumbnail: attachment.thumbnail.map { Data($0).base64EncodedString() }))
    }
    return posts
  }

  /// Uploads one media (resuming its upload if the file names one the relay still
  /// has); its relay id.
  private func upload(
    _ media: Attachment, mediaID: Int64, for requestID: Int64, progress: TransferProgress
  ) async throws(MediaTransfer.Failure) -> Int64 {
    let file = repository.mediaFolder.file(media.sha256)
    guard FileSystem.size(atPath: file) == media.size, let digest = SHA256.bytes(hex: media.sha256) else {
      // Retried with the outbox's backoff and attempts, as a post that failed: the file
      // may be put back (an import `--with-media`), and the message is never dropped early.
      throw MediaTransfer.Failure(
        description: "\(file) is missing or changed: request \(requestID) waits for it", retryable: true)
    }
    let transfer = self.transfer
    var url = (try? repository.uploadURL(ofMedia: mediaID)) ?? nil
    // An upload the relay dropped (expired) starts again.
    if let known = url, try await transfer.offset(of: known) == nil { url = nil }
    let resumed = url != nil
    if url == nil {
      let created = try await transfer.create(length: media.size, sha256: digest, mime: media.mime)
      do {
        try await patiently { try repository.recordUpload(ofMedia: mediaID, url: created) }
      } catch {
        log("outbox: \(error)")
      }
      url = created
    }
    log(
      "\(resumed ? "resuming the upload of" : "uploading") \(media.mime) \(media.sha256.prefix(12)) "
        + "(\(media.size) bytes) for request \(requestID)")
    let relayID = try await transfer.send(file: file, to: url ?? "", progress: progress.update)
    do {
      try await patiently { try repository.recordUploaded(media: mediaID, relayID: relayID) }
    } catch {
      log("outbox: \(error)")
    }
    return relayID
  }

  /// Received media of the kinds and sizes the options name are wanted here at once.
  func wantDownloads(of messages: [Message]) async {
    guard options.autoDownloadMax > 0 else { return }
    let wanted = messages.flatMap(\.attachments).filter {
      $0.relayID != nil && $0.size <= options.autoDownloadMax && options.autoDownloadKinds.contains($0.kind)
    }
    guard !wanted.isEmpty else { return }
    do {
      if try await patiently({ try repository.want(wanted.map(\.sha256)) }) > 0 { doorbell.ring() }
    } catch {
      log("media: \(error)")
    }
  }

  /// Starts the next wanted download, if none is in flight and no backoff holds;
  /// the seconds until the backoff ends (nil: nothing to wait for).
  func drainDownloads() -> Double? {
    guard downloadInFlight == nil else { return nil }
    if let retry = downloadRetry, retry.at > .now {
      let left = ContinuousClock.now.duration(to: retry.at).components
      return Double(left.seconds) + Double(left.attoseconds) / 1e18
    }
    do {
      let given = downloadsGivenUp
      guard
        let next = try repository.partialMedia(limit: given.count + 1).first(where: { !given.contains($0.sha256) })
      else { return nil }
      downloadInFlight = Task { await download(next) }
      return nil
    } catch {
      log("media: \(error)")
      return 1
    }
  }

  /// Downloads one media into the media folder (resuming its partial file) and marks
  /// it local; a failure is retried with the outbox's backoff, up to its attempts, and a
  /// refusal (the relay no longer has it) puts it back to `remote`.
  private func download(_ media: Attachment) async {
    defer {
      downloadInFlight = nil
      doorbell.ring()
    }
    let folder = repository.mediaFolder
    guard let relayID = media.relayID, let digest = SHA256.bytes(hex: media.sha256) else {
      await giveUp(media, reason: "no relay id")
      return
    }
    do {
      try folder.create()
      let progress = TransferProgress(
        total: media.size, what: "download of \(media.sha256.prefix(12))", log: options.log)
      try await transfer.download(
        media: relayID, size: media.size, sha256: digest, to: folder.file(media.sha256), progress: progress.update)
      try await patiently { try repository.downloaded([media.sha256]) }
      downloadRetry = nil
      log("downloaded \(media.mime) \(media.sha256.prefix(12)) (\(media.size) bytes) as media \(relayID)")
    } catch let failure as MediaTransfer.Failure {
      if stopping { return }
      guard failure.retryable else {
        await giveUp(media, reason: failure.description)
        return
      }
      let failures = (downloadRetry?.failures ?? 0) + 1
      if failures >= options.maxAttempts {
        downloadsGivenUp.insert(media.sha256)
        downloadRetry = nil
        log("download of \(media.sha256.prefix(12)) failed \(failures) times (\(failure)); the next run tries again")
        return
      }
      let delay = options.outboxBackoff.delay(attempt: failures, random: options.random)
      downloadRetry = (ContinuousClock.now.advanced(by: .milliseconds(Int64(delay * 1000))), failures)
      log(String(format: "download of \(media.sha256.prefix(12)) failed (\(failure)); retry in %.1f s", delay))
    } catch {
      log("media: \(error)")
      downloadsGivenUp.insert(media.sha256)
    }
  }

  private func giveUp(_ media: Attachment, reason: String) async {
    downloadsGivenUp.insert(media.sha256)
    _ = repository.mediaFolder.remove(partialOnly: media.sha256)
    do {
      try await patiently { try repository.abandonDownload(of: media.sha256) }
    } catch {
      log("media: \(error)")
    }
    log("download of \(media.sha256.prefix(12)) failed for good: \(reason)")
  }
}

/// Log lines as a transfer passes each quarter of its bytes.
final class TransferProgress: Sendable {
  let total: Int64
  let what: String
  let log: @Sendable (String) -> Void
  private let logged = Locked(0)
  private let moved = Locked(false)

  /// Whether the transfer moved forward at all.
  var advanced: Bool { moved.withLock { $0 } }

  init(total: Int64, what: String, log: @escaping @Sendable (String) -> Void) {
    self.total = total
    self.what = what
    self.log = log
  }

  func update(_ done: Int64) {
    moved.withLock { $0 = true }
    guard total > 0, done < total else { return }
    let quarter = Int(done * 4 / total)
    let due = logged.withLock { logged -> Bool in
      guard quarter > logged else { return false }
      logged = quarter
      return true
    }
    if due { log("\(what): \(done) of \(total) bytes (\(quarter * 25)%)") }
  }
}
