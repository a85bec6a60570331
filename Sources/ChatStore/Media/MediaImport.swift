extension ChatRepository {
  /// Stores the media rows of imported attachments (`chatdb import` of a history, format
  /// 3) in the caller's transaction, by the rule of every other writer: one row per
  /// SHA-256, `local` when `folder` holds the file at its size and `remote` otherwise, a
  /// row already there keeping its state unless the file is here. Their row ids, in order.
  public static func storeImportedMedia(
    _ attachments: [Attachment], at: String, folder: MediaFolder, _ db: Database
  ) throws -> [Int64] {
    try attachments.flatMap { attachment in
      let here = FileSystem.size(atPath: folder.file(attachment.sha256)) == attachment.size
      return try storeMedia([attachment], state: here ? .local : .remote, at: at, db)
    }
  }
}
