/// The app's own files in `watchdog-trials close-own` and `closefrom`: what each holds, so that a test can tell
/// they were not written by anyone else.
public enum AppFiles {
    /// How many files the app opens on the numbers it freed.
    public static let count = 7

    /// The text of app file `index` (`app-<index>` in the trial's directory).
    public static func text(_ index: Int) -> String {
        String(repeating: "app file \(index): this is the app's own data, not the watchdog's\n", count: 40)
    }
}
