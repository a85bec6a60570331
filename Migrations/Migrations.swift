// The `.sql` files beside this one are the schema's whole history. Each is embedded
// into the binary at build time (see Plugins/EmbedMigrations); the generated
// `EmbeddedMigrationFile.all` lists them. A shipped file is never edited: add a new one.

/// One `Migrations/NNNN_name.sql` file as it was when the binary was built.
public struct EmbeddedMigrationFile: Sendable {
  /// The file name, for example `0001_initial.sql`.
  public let fileName: String
  /// The file's text.
  public let sql: String
}
