#!/usr/bin/env bash
# Checks that a Swift package outside this repo can depend on stallprof by path and use the StallProfiler API as
# documented: it builds a throwaway app in a temporary directory, runs it (a busy and a blocked stall), folds its
# captures with this repo's stallprof and checks the app's own function names and --state, then runs the same
# through the command plugin (`swift package stallprof ...`) from the outside package. Exits non-zero on any
# failure. (A path dependency is named after its directory: here that of this checkout.)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ExternalApp/Sources/ExternalApp"
cat > "$work/ExternalApp/Package.swift" <<SWIFT
// swift-tools-version:6.0
import PackageDescription
let package = Package(
    name: "ExternalApp",
    dependencies: [.package(path: "$repo")],
    targets: [.executableTarget(name: "ExternalApp", dependencies: [.product(name: "StallProfiler", package: "$(basename "$repo")")])]
)
SWIFT
cat > "$work/ExternalApp/Sources/ExternalApp/main.swift" <<'SWIFT'
import Foundation
import StallProfiler

@inline(never) func externalSpin(_ level: Int, _ deadline: Date) -> Int {
    if level == 0 { var x = 0; while Date() < deadline { x &+= 1 }; return x }
    return externalSpin(level - 1, deadline) &+ Int(Date().timeIntervalSince1970) % 2
}

@inline(never) func externalWait(_ lock: NSLock) { lock.lock(); lock.unlock() }

let watchdog = try StallWatchdog.start(StallWatchdog.Configuration(
    threshold: .milliseconds(100), sampleInterval: .milliseconds(5), outputPath: CommandLine.arguments[1]))
let lock = NSLock()
DispatchQueue.main.asyncAfter(deadline: .now() + 0.3) {
    _ = externalSpin(10, Date().addingTimeInterval(0.5))
    DispatchQueue.main.asyncAfter(deadline: .now() + 0.3) {
        lock.lock()
        Thread { usleep(500_000); lock.unlock() }.start()
        externalWait(lock)
        DispatchQueue.main.asyncAfter(deadline: .now() + 0.3) {
            watchdog.stop()
            exit(0)
        }
    }
}
RunLoop.main.run()
SWIFT
echo "external package: building $work/ExternalApp against $repo"
(cd "$work/ExternalApp" && swift build 2>&1 | tail -1)
"$work/ExternalApp/.build/debug/ExternalApp" "$work/app.stalls"
stallprof="$repo/.build/debug/stallprof"
[ -x "$stallprof" ] || (cd "$repo" && swift build --product stallprof >/dev/null)
busy=$("$stallprof" fold --state busy "$work/app.stalls")
blocked=$("$stallprof" fold --state blocked "$work/app.stalls")
fail=0
grep -q "ExternalApp.externalSpin" <<<"$busy" || { echo "FAIL: busy stacks lack externalSpin"; fail=1; }
grep -q "ExternalApp.externalWait" <<<"$blocked" || { echo "FAIL: blocked stacks lack externalWait"; fail=1; }
grep -q "externalWait" <<<"$busy" && { echo "FAIL: --state busy kept the blocked stall"; fail=1; }
# The command plugin, from the outside package: `swift package stallprof ...` runs the CLI on its files (paths
# relative to where it runs), and a failing gate fails the command (SwiftPM reports the CLI's status).
# A landing CI run saw this fold exit non-zero once (stderr was discarded then, so the cause is unknown; 40+ runs
# passed before and since): its messages are now printed, and one failure is retried once, printed in full, so
# the log names the cause while a second failure still fails the check.
plugin_fold() { (cd "$work/ExternalApp" && swift package stallprof fold --state busy "../app.stalls" 2>"$work/plugin.err"); }
if ! plugin=$(plugin_fold); then
    echo "NOTE: swift package stallprof fold exited non-zero once; its messages:"; sed 's/^/  | /' "$work/plugin.err"
    plugin=$(plugin_fold) || { echo "FAIL: swift package stallprof fold exited non-zero twice:"; tail -20 "$work/plugin.err"; fail=1; }
fi
grep -q "ExternalApp.externalSpin" <<<"$plugin" || { echo "FAIL: the plugin's fold lacks externalSpin"; fail=1; }
if (cd "$work/ExternalApp" && swift package stallprof report --fail-on 'stall>100ms' ../app.stalls >/dev/null 2>"$work/gate.err"); then
    echo "FAIL: swift package stallprof report --fail-on passed a capture with stalls"; fail=1
fi
grep -q "exit code 1" "$work/gate.err" || { echo "FAIL: the gate's status is not reported: $(tail -2 "$work/gate.err")"; fail=1; }
[ $fail -eq 0 ] && echo "external package: 1 passed, 0 failed" || { echo "external package: 0 passed, 1 failed"; exit 1; }
