import Foundation
import PackagePlugin

/// Embeds `Protocol/openrpc.json` into the library as `openRPCDocument`, so `rpc.discover`
/// serves the one source of truth without reading files at run time, and `Protocol/VERSION`
/// (the one version source) as `embeddedVersion`, which `--version` and `status` report.
@main
struct EmbedOpenRPC: BuildToolPlugin {
  func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
    let input = context.package.directoryURL.appending(path: "Protocol/openrpc.json")
    let output = context.pluginWorkDirectoryURL.appending(path: "OpenRPCDocument.swift")
    let versionInput = context.package.directoryURL.appending(path: "Protocol/VERSION")
    let versionOutput = context.pluginWorkDirectoryURL.appending(path: "EmbeddedVersion.swift")
    // \042 is a double quote: the file becomes a raw multi-line string literal.
    let script =
      "{ printf '/// Protocol/openrpc.json, embedded at build time.\\npackage let openRPCDocument = #####\\042\\042\\042\\n'; "
      + "cat \"$1\"; printf '\\n\\042\\042\\042#####\\n'; } > \"$2\""
    let versionScript =
      "printf '/// Protocol/VERSION, embedded at build time.\\npackage let embeddedVersion = \\042%s\\042\\n' "
      + "\"$(tr -d ' \\n\\r\\t' < \"$1\")\" > \"$2\""
    return [
      .buildCommand(
        displayName: "Embedding Protocol/openrpc.json",
        executable: URL(fileURLWithPath: "/bin/sh"),
        arguments: ["-c", script, "embed", input.path, output.path],
        inputFiles: [input],
        outputFiles: [output]
      ),
      .buildCommand(
        displayName: "Embedding Protocol/VERSION",
        executable: URL(fileURLWithPath: "/bin/sh"),
        arguments: ["-c", versionScript, "embed", versionInput.path, versionOutput.path],
        inputFiles: [versionInput],
        outputFiles: [versionOutput]
      ),
    ]
  }
}
