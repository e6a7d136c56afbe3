/// The names of the environment variables through which stallprof's parts talk: the app's `StallWatchdog` and
/// `StallFlags` (StallProfiler) read them; `stallprof bisect` and `check` (StallBisect) set them for the runs they
/// start. Declared once here, so that both sides import the same spelling.
public enum EnvironmentName {
    /// The capture file the app's watchdog writes; unset or empty: `startFromEnvironment()` starts nothing.
    public static let output = "STALLPROF_OUTPUT"
    /// The stall threshold in milliseconds (default 250).
    public static let threshold = "STALLPROF_THRESHOLD_MS"
    /// The sampling interval in milliseconds (default 10; fractions allowed).
    public static let interval = "STALLPROF_INTERVAL_MS"
    /// The saturation period in milliseconds (default 1000; 0 turns saturation detection off).
    public static let saturation = "STALLPROF_SATURATION_MS"
    /// Swift's cooperative pool watched as a target with this threshold in milliseconds (unset, empty or 0: not
    /// watched): the one target an app can be given without code, as it needs no object of the app's.
    public static let pool = "STALLPROF_POOL_MS"
    /// The flags disabled in this run, comma-separated (default: none).
    public static let disable = "STALLPROF_DISABLE"
    /// A file that receives each flag name the app consults, one per line (default: none).
    public static let flagsReport = "STALLPROF_FLAGS_REPORT"
    /// The run id bisect gives every process of one run, so that a process that left the run's group is found.
    public static let runID = "STALLPROF_RUN_ID"
    /// `1` makes the golden-file tests rewrite their expected files instead of comparing (tests only).
    public static let bless = "STALLPROF_BLESS"
    /// Directories of debug files for `stallprof`'s symbolizer, colon-separated, searched before `--debug-dir`'s.
    public static let debugDirectories = "STALLPROF_DEBUG_DIRS"
}
