import Foundation
import PackagePlugin

/// Embeds `Migrations/*.sql` into the `Migrations` module as Swift string literals.
///
/// The `.sql` files are the command's inputs and live in the target's own folder:
/// SwiftPM re-plans the build when a file there is added or removed and re-runs the
/// command when one is edited, so a build never ships a stale migration set.
@main
struct EmbedMigrations: BuildToolPlugin {
  func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
    guard let target = target as? SourceModuleTarget else { return [] }
    let files = target.sourceFiles.map(\.url).filter { $0.pathExtension == "sql" }
      .sorted { $0.lastPathComponent < $1.lastPathComponent }
    let script = context.package.directoryURL.appending(path: "Plugins/EmbedMigrations/embed-migrations.sh")
    let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
    return [
      .buildCommand(
        displayName: "Embedding \(files.count) migrations",
        executable: URL(fileURLWithPath: "/bin/sh"),
        arguments: [script.path, output.path] + files.map(\.path),
        inputFiles: files + [script],
        outputFiles: [output])
    ]
  }
}
