/// `stallprof completions SHELL` and `stallprof man`: generated from the other commands' declarations.
enum ShellCommands {
    static var completions: Command<ShellCompletions.Shell?> {
        Command(
            name: "completions", abstract: "a shell completion script (bash, zsh or fish) for stallprof",
            synopsis: "bash|zsh|fish",
            discussion: """
                Prints a completion script generated from every command's options. bash: `source <(stallprof \
                completions bash)`, or save it as /etc/bash_completion.d/stallprof; zsh: save it as _stallprof in \
                a directory of $fpath; fish: save it as ~/.config/fish/completions/stallprof.fish.
                """,
            groups: [], arguments: [("SHELL", "bash, zsh or fish")], defaults: nil
        ) { invocation in
            guard invocation.positionals.count == 1, let shell = ShellCompletions.Shell(rawValue: invocation.positionals[0])
            else { throw UsageError(message: "completions takes one shell: bash, zsh or fish") }
            print(MainActor.assumeIsolated { ShellCompletions.script(shell, commands: subcommands) }, terminator: "")
        }
    }

    static var man: Command<Void?> {
        Command(
            name: "man", abstract: "the manual page, stallprof(1), in roff",
            synopsis: "> stallprof.1",
            discussion: """
                Prints stallprof(1) generated from every command's usage: `man -l <(stallprof man)`, or save it as \
                share/man/man1/stallprof.1 under an install prefix.
                """,
            groups: [], defaults: nil
        ) { invocation in
            guard invocation.positionals.isEmpty else { throw UsageError(message: "man takes no argument") }
            print(MainActor.assumeIsolated { ManPage.page(subcommands) }, terminator: "")
        }
    }
}
