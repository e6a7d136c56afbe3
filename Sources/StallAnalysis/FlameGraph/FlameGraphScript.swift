/// The JavaScript embedded in every flame graph, written in `FlameGraphScript.js` next to this file (tooltips,
/// click to zoom, search, the view kept in the URL: see its header). The `EmbedText` build-tool plugin
/// (Plugins/EmbedText) turns that file into the generated `FlameGraphScript.source` at build time, so the
/// `stallprof` binary stays self-contained (no resource bundle to find next to the executable).
///
/// The SVG writer defines `fg_nametype`, `fg_fontsize`, `fg_fontwidth`, `fg_inverted` and `fg_searchcolor` before
/// the script.
enum FlameGraphScript {}
