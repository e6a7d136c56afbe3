import StallFormat
#if canImport(Glibc)
import Glibc
#endif

/// Feature flags that `stallprof bisect` can switch off, to find which components cause a freeze.
///
/// ```swift
/// if StallFlags.isEnabled("autoscroll") { scrollToBottom() }
/// ```
///
/// A flag is enabled unless its name is listed in the environment variable `STALLPROF_DISABLE`
/// (comma-separated names, spaces around names ignored). The variable is read once, at the first call.
///
/// So that the tool can tell a flag the app never reads from an innocent one: when `STALLPROF_FLAGS_REPORT`
/// names a file, the first time each distinct flag name is consulted, the name and a newline are appended to
/// that file with a single `write(2)` (opened `O_APPEND`), so the line survives a kill that follows. Before each
/// write the descriptor is checked to be that file still (`fstat`); one the app closed is left alone and the path
/// reopened, said once on standard error.
public enum StallFlags {
    /// Environment variable listing the disabled flags, comma-separated.
    public static let disableVariable = EnvironmentName.disable
    /// Environment variable naming the file that receives each consulted flag name, one per line.
    public static let reportVariable = EnvironmentName.flagsReport

    /// False when `name` is listed in `STALLPROF_DISABLE`, true otherwise. Safe from any thread; cheap enough
    /// for a hot loop (one uncontended lock).
    public static func isEnabled(_ name: String) -> Bool {
        registry.withLock { state in
            if state == nil {
                state = FlagRegistry(
                    disabledList: environmentValue(disableVariable), reportPath: environmentValue(reportVariable))
            }
            return state!.isEnabled(name)
        }
    }

    private static let registry = Locked<FlagRegistry?>(nil)
}

/// The parsed flag configuration and the report of consulted names.
struct FlagRegistry: ~Copyable {
    let disabled: Set<String>
    private var reported: Set<String> = []
    private let reportPath: String?
    /// The report file's descriptor (-1: none), checked before each write to be the file it was opened as: one
    /// the app closed (and perhaps reused) is left alone, and the path reopened.
    private(set) var reportDescriptor: Int32 = -1
    private var reportIdentity: FileIdentity? = nil
    private var warnedTaken = false

    /// Parses `disabledList` (comma-separated) and opens `reportPath` for appending when given.
    init(disabledList: String?, reportPath: String?) {
        disabled = Set(
            (disabledList ?? "").split(separator: ",").map { $0.trimmingBlanks() }.filter { !$0.isEmpty })
        self.reportPath = reportPath.flatMap { $0.isEmpty ? nil : $0 }
        openReport()
    }

    /// Whether `name` is enabled; reports the name the first time it is consulted.
    mutating func isEnabled(_ name: String) -> Bool {
        if reportPath != nil, reported.insert(name).inserted {
            if let identity = reportIdentity,
                FileIdentity.status(ofDescriptor: reportDescriptor).map(FileIdentity.init) != identity
            {
                if !warnedTaken {
                    warnedTaken = true
                    let line = "stallprof: descriptor \(reportDescriptor) of \(StallFlags.reportVariable) (\(reportPath!)) was "
                        + "closed by someone else (and perhaps reused); it is left alone and the path reopened\n"
                    _ = line.withCString { write(2, $0, strlen($0)) }
                }
                openReport()
            }
            if reportDescriptor >= 0 {
                let line = Array((name + "\n").utf8)
                _ = line.withUnsafeBytes { write(reportDescriptor, $0.baseAddress, $0.count) }
            }
        }
        return !disabled.contains(name)
    }

    private mutating func openReport() {
        reportDescriptor = reportPath.map { open($0, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644) } ?? -1
        reportIdentity = FileIdentity.status(ofDescriptor: reportDescriptor).map(FileIdentity.init)
    }

    deinit {
        if let reportIdentity, FileIdentity.status(ofDescriptor: reportDescriptor).map(FileIdentity.init) == reportIdentity {
            close(reportDescriptor)
        }
    }
}
