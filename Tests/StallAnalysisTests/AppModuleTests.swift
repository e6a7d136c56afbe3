import Foundation
import StallFormat
import StallTestSupport
import Testing

@testable import StallAnalysis

/// An escaping closure with a context: the compiler emits a `partial apply forwarder` for it, found in this test
/// binary's symbols by ``AppModuleTests``.
enum ForwarderFixture {
    @inline(never) static func counter(from start: Int) -> () -> Int {
        var value = start
        return {
            value += 1
            return value
        }
    }
}

/// App code by module (issue 18): the module of a symbol, the app's modules of an executable, and closures seen
/// only through their partial apply forwarder.
@Suite struct AppModuleTests {
    @Test func moduleOfDemangledNames() {
        let cases: [(String, String?)] = [
            ("MyApp.View.pass() -> ()", "MyApp"),
            ("static MyApp.App.$main() -> ()", "MyApp"),
            ("MyApp.View.deinit", "MyApp"),
            ("closure #1 () -> () in MyApp.View.pass() -> ()", "MyApp"),
            ("closure #1 @Swift.MainActor () -> () in closure #1 @Swift.MainActor @Sendable () -> () in "
                + "ChatUI.Window.show(layoutMilliseconds: Swift.Int) -> ()", "ChatUI"),
            ("closure #1 (A) -> A in static Swift.MainActor.assumeIsolated<A>(_: () -> A) -> A", "Swift"),
            ("closure #1 @Sendable (Foundation.Timer) -> () in chat_freeze", "chat_freeze"),
            ("generic specialization <Swift.Int> of MyApp.f<A>(A) -> ()", "MyApp"),
            ("closure #1 (A) -> () in generic specialization <Swift.Int> of Kit.map<A>(A) -> ()", "Kit"),
            ("merged function signature specialization <Arg[0] = Dead> of static Kit.Box.get() -> ()", "Kit"),
            ("(extension in MyApp):Swift.Array.foo() -> ()", "MyApp"),
            ("static (extension in Kit):Swift.Collection.sum() -> Swift.Int", "Kit"),
            ("protocol witness for Swift.Sequence.makeIterator() -> A.Iterator in conformance MyApp.Foo : "
                + "Swift.Sequence in MyApp", "MyApp"),
            ("dispatch thunk of Kit.Renderer.draw() -> ()", "Kit"),
            ("(1) suspend resume partial function for MyApp.load() async -> ()", "MyApp"),
            ("partial apply forwarder for closure #1 () -> () in ChatUI.Window.layoutPass() -> ()", "ChatUI"),
            ("Swift.Array.append(A) -> ()", "Swift"),
            ("type metadata accessor for MyApp.Foo", nil),
            ("__libc_start_call_main", nil),
        ]
        for (name, module) in cases {
            #expect(AppCodeRule.module(ofDemangled: name) == module, "\(name)")
        }
    }

    @Test func sanitizerRuntimeFramesAreNotAppCode() {
        #expect(AppCodeRule.isSanitizerRuntime("_Z23MemcmpInterceptorCommonPvPFiPKvS1_mES1_S1_m"))
        #expect(AppCodeRule.isSanitizerRuntime("_ZN6__asan9Allocator8AllocateEmmPN11__sanitizer18BufferedStackTraceENS_9AllocTypeEb"))
        #expect(AppCodeRule.isSanitizerRuntime("___interceptor_malloc"))
        #expect(!AppCodeRule.isSanitizerRuntime("_Z9layoutPassv"))
    }

    @Test func moduleOfMangledSymbols() {
        #expect(AppCodeRule.module(ofMangled: "$s5MyApp4ViewC4passyyF") == "MyApp")
        #expect(AppCodeRule.module(ofMangled: "_$s6ChatUI6WindowC10layoutPassyyFyycfU_TA") == "ChatUI")
        #expect(AppCodeRule.module(ofMangled: "$sSa6appendyyxnF") == "Swift")
        #expect(AppCodeRule.module(ofMangled: "$ss5printyypF") == "Swift")
        #expect(AppCodeRule.module(ofMangled: "$sSo8NSObjectC") == "__C")
        #expect(AppCodeRule.module(ofMangled: "$s99Short") == nil, "the length runs past the end")
        #expect(AppCodeRule.module(ofMangled: "main") == nil && AppCodeRule.module(ofMangled: "$s0x") == nil)
        // A demangled name without a leading module falls back to the mangled prefix; C names have none.
        #expect(AppCodeRule.module(symbol: "$s5MyApp3FooVMa", demangled: "type metadata accessor for MyApp.Foo") == "MyApp")
        #expect(AppCodeRule.module(symbol: "$s5MyApp3FooVMa", demangled: "$s5MyApp3FooVMa") == "MyApp")
        #expect(AppCodeRule.isToolchainModule("FoundationEssentials") && AppCodeRule.isToolchainModule("_Concurrency"))
        #expect(!AppCodeRule.isToolchainModule("ChatUI") && !AppCodeRule.isToolchainModule("StallSamples"))
    }

    @Test func appModulesOfAnExecutable() {
        #expect(AppModules.moduleName(ofExecutable: "/build/debug/chat-freeze") == "chat_freeze")
        #expect(AppModules.moduleName(ofExecutable: "dependency-loop") == "dependency_loop")
        #expect(AppModules.moduleName(ofExecutable: "/bin/2fa.tool") == "_2fa_tool")
        func bytes(_ text: String, _ body: (UnsafeRawBufferPointer) -> Bool) -> Bool {
            Array(text.utf8).withUnsafeBytes(body)
        }
        #expect(bytes("$s5MyApp0B0V5$mainyyFZ", AppModules.containsEntryPoint))
        #expect(bytes("$s16stall_demo_async14StallDemoAsyncV5$mainyyYaKFZTQ0_", AppModules.containsEntryPoint))
        #expect(!bytes("$s5MyApp4mainyyF", AppModules.containsEntryPoint) && !bytes("main", AppModules.containsEntryPoint))
        #expect(bytes("_$s6ChatUI6WindowC") { AppModules.mangledPrefix($0).map { Array($0) } == Array("_$s6ChatUI".utf8) })
        #expect(bytes("$s9ChatUI") { AppModules.mangledPrefix($0) == nil })
        #expect(AppModules.detect(executable: "/nonexistent/app", symbols: nil) == nil)
    }

    @Test func aForwarderAloneReadsAsItsClosure() {
        let closure = "closure #1 () -> () in ChatUI.Window.layoutPass() -> ()"
        var alone = ["main", "partial apply forwarder for " + closure, "ChatUI.TextLayout.lineCount() -> Swift.Int"]
        Symbolizer.showForwardedClosures(&alone)
        #expect(alone == ["main", closure, "ChatUI.TextLayout.lineCount() -> Swift.Int"])
        var called = ["main", "partial apply forwarder for " + closure, closure]
        Symbolizer.showForwardedClosures(&called)
        #expect(called == ["main", "partial apply forwarder for " + closure, closure], "two frames of one closure")
        var simplified = ["partial apply for closure #1 in Window.layoutPass()"]
        Symbolizer.showForwardedClosures(&simplified)
        #expect(simplified == ["closure #1 in Window.layoutPass()"])
        var offsets = ["partial apply forwarder for \(closure)+0x1c", "\(closure)+0x40"]
        Symbolizer.showForwardedClosures(&offsets, offsets: true)
        #expect(offsets[0].hasPrefix("partial apply forwarder for "))
        let thunk = "partial apply forwarder for reabstraction thunk helper from @callee_guaranteed () -> () to ()"
        var helper = [thunk]
        Symbolizer.showForwardedClosures(&helper)
        #expect(helper == [thunk] && Symbolizer.forwardedClosure(thunk) == nil)
        #expect(Symbolizer.forwardedClosure("partial apply forwarder for implicit closure #2 in f") == "implicit closure #2 in f")
    }

    /// The forwarder and the closure of ``ForwarderFixture/counter(from:)`` in this test binary, as addresses inside
    /// them (two bytes in).
    func fixtureAddresses() throws -> (forwarder: UInt64, closure: UInt64) {
        _ = ForwarderFixture.counter(from: 1)()
        let image = ReportFixtures.ownImage
        let symbols = try #require(ELFSymbols(path: image.path))
        var found: [String: UInt64] = [:]
        symbols.forEachDefinedSymbol { bytes, value in
            let name = String(decoding: bytes, as: UTF8.self)
            if name.contains("16ForwarderFixtureO7counter"), name.hasSuffix("fU_TA") || name.hasSuffix("fU_") {
                found[name] = value
            }
        }
        let forwarder = try #require(found.first { $0.key.hasSuffix("TA") }, "\(found)")
        let closure = try #require(found[String(forwarder.key.dropLast(2))], "\(found)")
        return (image.loadBias + forwarder.value + 2, image.loadBias + closure + 2)
    }

    @Test func aForwarderAloneIsAppCodeWhenItsClosureIs() throws {
        let (forwarder, closure) = try fixtureAddresses()
        let system = ReportFixtures.system, leaf = ReportFixtures.systemLeaf
        let records = ReportFixtures.records(
            ReportFixtures.episode(1, at: 1_000, durationMs: 500, state: .busy,
                                   samples: Array(repeating: [leaf, forwarder, system], count: 10))
            + ReportFixtures.episode(2, at: 3_000, durationMs: 500, state: .busy,
                                     samples: Array(repeating: [closure, forwarder, system], count: 10)))
        let capture = try ReportFixtures.capture(records, name: "forwarder")
        var options = StallReportOptions()
        options.appModules = ["StallAnalysisTests"]
        let report = StallReport(captures: [capture], options: options)
        let name = try #require(report.episodes[0].profile.heaviestStack.dropFirst().first)
        #expect(name.hasPrefix("closure #1 () -> Swift.Int in static StallAnalysisTests.ForwarderFixture.counter"))
        #expect(report.episodes[0].profile.appFrames.map(\.function) == [name])
        #expect(report.episodes[0].profile.appFrames.map(\.module) == ["StallAnalysisTests"])
        // With the closure's own frame after it, the forwarder keeps its name and is a helper.
        #expect(report.episodes[1].profile.heaviestStack.dropFirst().first == "partial apply forwarder for " + name)
        #expect(report.episodes[1].profile.appFrames.map(\.function) == [name])
        // fold reads it the same way.
        var stacks = FoldedStacks()
        var diagnostics = Diagnostics()
        StallCaptureImporter().fold(capture, into: &stacks, diagnostics: &diagnostics)
        #expect(stacks.rendered().contains("[libsystemfake.so.1];\(name);[libsystemfake.so.1] 10\n"))
        #expect(stacks.rendered().contains("[libsystemfake.so.1];partial apply forwarder for \(name);\(name) 10\n"))

        // By default the app is the executable's entry point's module (this binary's test runner), not this one:
        // the no-app-code hint names the module the time went to, and its function.
        let plain = StallReport(captures: [capture])
        #expect(plain.captures[0].appModules?.contains("StallAnalysisTests") == false)
        #expect(plain.episodes[0].profile.appFrames.isEmpty && plain.episodes[0].profile.noAppCodeShare == 1)
        let hint = try #require(plain.episodes[0].profile.hints.first { $0.kind == "no-app-code" })
        #expect(hint.module == "StallAnalysisTests")
        #expect(hint.text.contains("the loop is in StallAnalysisTests (closure #1 () -> Swift.Int in static "))
        #expect(hint.text.hasSuffix("on the stack in 100 % of samples); bisect its components"), "\(hint.text)")
    }
}
