import Testing

@testable import StallAnalysis

/// `--names short` (issue 19): demangled Swift names as Xcode and Instruments show them; every other name as it is.
@Suite struct ShortNamesTests {
    static let examples: [(String, String)] = [
        ("function signature specialization <Arg[1] = Dead> of static StallSamples.BusyWork.burn(until: Swift.UInt64) -> Swift.UInt64",
         "BusyWork.burn(until:)"),
        ("static StallSamples.BusyWork.descend(_: Swift.Int, until: Swift.UInt64) -> Swift.UInt64", "BusyWork.descend(_:until:)"),
        ("closure #1 @Swift.MainActor () -> () in closure #1 @Swift.MainActor @Sendable () -> () in cell_height.HostingView.setNeedsLayout() -> ()",
         "closure #1 in closure #1 in HostingView.setNeedsLayout()"),
        ("Foundation.RunLoop.run() -> ()", "RunLoop.run()"),
        ("Swift.Substring.subscript.getter : (Swift.String.Index) -> Swift.Character", "Substring.subscript.getter"),
        ("chat_freeze.ChatLayout.pass(Swift.Array<chat_freeze.Message>) -> Swift.Bool", "ChatLayout.pass(_:)"),
        ("closure #3 @Sendable (Foundation.Timer) -> () in chat_freeze", "closure #3 in chat_freeze"),
        ("generic specialization <Swift.Range<Swift.Int>> of Swift.IndexingIterator.next() -> Swift.Optional<A.Element>",
         "IndexingIterator.next()"),
        ("protocol witness for Swift.Strideable.advanced(by: A.Stride) -> A in conformance Swift.Int : Swift.Strideable in Swift",
         "protocol witness for Strideable.advanced(by:)"),
        ("reabstraction thunk helper from @escaping @callee_guaranteed @Sendable () -> () to @escaping @callee_unowned @convention(block) @Sendable () -> ()",
         "reabstraction thunk helper from @escaping @callee_guaranteed @Sendable () -> () to @escaping @callee_unowned @convention(block) @Sendable () -> ()"),
        ("libswiftCore.so`Swift.Array.count.getter : Swift.Int", "libswiftCore.so`Array.count.getter"),
        ("chat_freeze.ChatLayout.(measure in _C31765D6C2F94AB0A0B6A7BD6F0E1A1A)(chat_freeze.Message) -> Swift.Double",
         "ChatLayout.measure(_:)"),
        ("specialized Swift.Array.append(__owned A) -> ()", "Array.append(_:)"),
        ("partial apply forwarder for closure #1 () -> () in static App.Feed.poll() -> ()", "partial apply forwarder for closure #1 in Feed.poll()"),
        ("static StallSamples.BusyWork.burn(until: Swift.UInt64) -> Swift.UInt64_[i]", "BusyWork.burn(until:)_[i]"),
        ("(extension in Foundation):Swift.String.init(format: Swift.String, _: Swift.CVarArg...) -> Swift.String",
         "String.init(format:_:)"),
        // fold --lines/--inline's suffixes stay after the short name.
        ("StallSamples.monotonicNanoseconds() -> Swift.UInt64_[i]:Workloads.swift:40", "monotonicNanoseconds()_[i]:Workloads.swift:40"),
        ("static StallSamples.BusyWork.burn(until: Swift.UInt64) -> Swift.UInt64:Workloads.swift:70", "BusyWork.burn(until:):Workloads.swift:70"),
        ("__clock_gettime:clock_gettime.c:42", "__clock_gettime:clock_gettime.c:42"),
        // Not demangled Swift: as it is.
        ("__lll_lock_wait", "__lll_lock_wait"), ("_dispatch_main_queue_callback_4CF", "_dispatch_main_queue_callback_4CF"),
        ("[libsystemfake.so.1]", "[libsystemfake.so.1]"), ("main", "main"), ("BusyWork.burn(until:)", "BusyWork.burn(until:)"),
        ("std::vector<int>::push_back(int const&)", "std::vector<int>::push_back(int const&)"),
    ]

    @Test(arguments: examples)
    func shortNames(_ full: String, _ short: String) {
        #expect(ShortNames.short(full) == short)
        #expect(ShortNames.short(short) == short, "short twice is short")
    }

    /// Every input's names go through the same rules after import (perf, `sample`, speedscope, folded): the stack
    /// transform, which demangles first when asked.
    @Test func theTransformShortensEveryInputsNames() {
        var stacks = FoldedStacks()
        stacks.add(frames: ["main", "$s12StallSamples8BusyWorkO4burn5untils6UInt64VAG_tFZ",
                            "Foundation.RunLoop.run() -> ()_[i]"])
        var transforms = StackTransforms()
        (transforms.demangleSwift, transforms.names) = (true, .short)
        var diagnostics = Diagnostics()
        #expect(transforms.apply(to: stacks, diagnostics: &diagnostics).rendered() == "main;BusyWork.burn(until:);RunLoop.run()_[i] 1\n")
        // A frame's source (speedscope's file and line) follows it to its short name.
        stacks.frameSources = ["Foundation.RunLoop.run() -> ()_[i]": FrameSource(file: "RunLoop.swift", line: 9)]
        #expect(transforms.apply(to: stacks, diagnostics: &diagnostics).frameSources
            == ["RunLoop.run()_[i]": FrameSource(file: "RunLoop.swift", line: 9)])
        transforms.names = .full
        #expect(transforms.apply(to: stacks, diagnostics: &diagnostics).rendered()
            == "main;static StallSamples.BusyWork.burn(until: Swift.UInt64) -> Swift.UInt64;Foundation.RunLoop.run() -> ()_[i] 1\n")
    }
}
