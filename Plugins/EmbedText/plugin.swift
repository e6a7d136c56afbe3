import Foundation
import PackagePlugin

/// Build-tool plugin: every `NAME.js` file of a target becomes a generated Swift source declaring
/// `extension NAME { static let source: String }` with the file's text, so text such as the flame graph's script
/// is edited (and syntax-checked) as its own file yet compiled into the binary: no resource bundle to find next to
/// the executable at run time. The target declares `enum NAME` itself. The files are rebuilt when the input changes.
@main
struct EmbedText: BuildToolPlugin {
    /// One build command per `.js` file of `target`.
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let module = target.sourceModule else { return [] }
        let tool = try context.tool(named: "stallprof-embed-text")
        return module.sourceFiles(withSuffix: "js").map { file in
            let name = file.url.deletingPathExtension().lastPathComponent
            let output = context.pluginWorkDirectoryURL.appending(path: "\(name).embedded.swift")
            return .buildCommand(
                displayName: "Embedding \(file.url.lastPathComponent) as \(name).source",
                executable: tool.url,
                arguments: [file.url.path, output.path, name],
                inputFiles: [file.url],
                outputFiles: [output])
        }
    }
}
