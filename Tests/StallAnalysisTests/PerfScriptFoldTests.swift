import Testing
@testable import StallAnalysis

/// perf script input: stackcollapse-perf.pl's rules and the inferno fixes, on the perf-script.txt fixture.
@Suite struct PerfScriptFoldTests {
    let file = "perf-script.txt"

    @Test func defaultRulesMatchTheReference() throws {
        let (text, warnings) = try FoldFixture.fold([file])
        #expect(text.hasPrefix("cpp;"))  // the whole output: Fixtures/golden/fold/perf-script.expected
        // The second event type is filtered out (first-event rule) and said so; one line is not perf script.
        #expect(warnings.contains { $0.contains("kept only 'cpu-clock:u', skipped 'instructions:u'") })
        #expect(warnings.contains { $0.contains("1 unrecognized line skipped (line 34: \"this line is not perf script\")") })
    }

    @Test func rootFrameWithPIDAndTID() throws {
        let pid = try FoldFixture.text(file) { $0.perf.includePID = true }
        #expect(pid.contains("my_app-4242;main;"))
        #expect(pid.contains("java-?;Interpreter"))
        let tid = try FoldFixture.text(file) { $0.perf.includeTID = true }
        #expect(tid.contains("my_app-4242/4243;main;"))
        #expect(tid.contains("java-?/77;Interpreter"))
    }

    @Test func kernelAnnotationsIncludeVdsoVersionedVmlinuxAndModules() throws {
        let text = try FoldFixture.text(file) { $0.perf.annotateKernel = true }
        #expect(text.contains("my_app;[unknown];[libfoo.so];__softirqentry_text_start_[k];mlx5e_napi_poll_[k];native_safe_halt_[k] 250000"))
        #expect(text.contains("helper;[[vdso]]_[k];clock_gettime@@GLIBC_2.17 250000"))
    }

    @Test func jitAnnotationsForPerfMapsAndJitdump() throws {
        let text = try FoldFixture.text(file) { $0.perf.annotateJIT = true }
        #expect(text.contains("java;Interpreter_[j];org/example/A:.a_[j];org/example/B:.b_[i];org/example/C:.c_[i];org/example/Foo:.bar_[j] 100"))
    }

    @Test func addressesForUnknownSymbols() throws {
        let text = try FoldFixture.text(file) { $0.perf.includeAddresses = true }
        #expect(text.contains("my_app;[unknown <0>];[libfoo.so <7f0000002000>];"))
        #expect(text.contains("[[vdso] <7ffd00000a00>]"))
    }

    @Test func inlinedFramesArePlainUnlessAsked() throws {
        #expect(try FoldFixture.text(file).contains("$s5MyApp6workeryyF;helper;[[vdso]]"))
        let marked = try FoldFixture.text(file) { $0.perf.markInlined = true }
        #expect(marked.contains("$s5MyApp6workeryyF;helper_[i];[[vdso]]"))
    }

    @Test func eventFilterAndSampleCounting() throws {
        let other = try FoldFixture.text(file) { $0.perf.eventFilter = "instructions:u" }
        #expect(other == "other;skipped 1000\n")
        let samples = try FoldFixture.text(file) { $0.perf.countSamples = true }
        #expect(samples.contains("java;Interpreter;org/example/A:.a;org/example/B:.b_[i];org/example/C:.c_[i];org/example/Foo:.bar 1\n"))
        #expect(!samples.contains(" 250000"))
    }

    @Test func perlCompatibilityKeepsPerlsBugs() throws {
        let text = try FoldFixture.text(file) { $0.perf.perlCompatible = true }
        #expect(!text.contains("last;tail"))  // no blank line after the last stack: Perl drops it
        #expect(!text.contains("short;alone"))  // the frame on the event line is ignored
        #expect(text.contains(";std::function<int  1"))  // cut at the first "("
    }

    @Test func demangleRepairsRustAndSwift() throws {
        let text = try FoldFixture.text(file) {
            $0.perf.repairRust = true
            $0.transforms.demangleSwift = true
        }
        #expect(text.contains("cpp;<alloc::vec::Vec<T>>::push;say hi:now;"))
        #expect(text.contains("my_app;main;MyApp.worker() -> ();helper;"))
    }

    @Test func strictModeFailsAtTheFirstUnrecognizedLine() {
        let failure = FoldFixture.badData {
            try FoldFixture.text(file) { $0.perf.strict = true }
        }
        #expect(failure?.position == "line 34")
        #expect(failure?.reason.contains("this line is not perf script") == true)
    }

    @Test func lineShapesFollowThePerlExpressions() {
        func frame(_ text: String) -> (String, String, String)? {
            Array(text.utf8).withUnsafeBufferPointer { line in
                PerfLineSyntax.frameFields(line).map {
                    (String(decoding: line[$0.pc], as: UTF8.self), String(decoding: line[$0.function], as: UTF8.self),
                     String(decoding: line[$0.module], as: UTF8.self))
                }
            }
        }
        #expect(frame("\t7f1e2215d058  (/lib/libc.so)")! == ("7f1e2215d058", " ", "/lib/libc.so"))
        #expect(frame("  ffff f (x) (/usr/lib/a.so (deleted))")! == ("ffff", "f (x) (/usr/lib/a.so", "deleted)"))
        #expect(frame("no module here") == nil)
        let event = Array("V8 WorkerThread 24636/25607 [000] 94564.109216: 100 cycles:u: ".utf8).withUnsafeBufferPointer {
            line -> String? in
            PerfLineSyntax.eventFields(line).map { String(decoding: line[$0.comm], as: UTF8.self) }
        }
        #expect(event == "V8 WorkerThread")
    }

    @Test func namesAreTidiedLikeTheReference() {
        func tidy(_ name: String, perl: Bool = false) -> String {
            var out: [UInt8] = []
            Array(name.utf8).withUnsafeBufferPointer { PerfFrameRules.appendTidied($0, perl: perl, to: &out) }
            return String(decoding: out, as: UTF8.self)
        }
        #expect(tidy("net/http.(*Client).Do") == "net/http.(*Client).Do")  // Go method: kept whole
        #expect(tidy("foo::(anonymous namespace)::bar(int)") == "foo::(anonymous namespace)::bar")
        #expect(tidy("std::function<void (int)>::operator()(int)") == "std::function<void (int)>::operator")
        #expect(tidy("std::function<void (int)>::operator()(int)", perl: true) == "std::function<void ")
        #expect(tidy("{lambda(int)#2}::operator()") == "{lambda(int)#2}::operator")
        #expect(tidy("RegExp:[&<>\"']") == "RegExp:[&<>]")  // quotes dropped
        #expect(tidy("Lcom/x/Y;.run(I)V") == "Lcom/x/Y:.run")  // ";" to ":"
        #expect(tidy("plain_name") == "plain_name")
    }

    @Test func repeatedFrameLinesFoldLikeFreshOnes() throws {
        // The same frame line under a Java and a non-Java process folds differently (the cache keeps them apart).
        var text = ""
        for i in 0..<3 {
            text += "java 1 \(i).0: 1 cycles:\n\t    10 Lcom/x/Y;.f(I)V (/tmp/perf-1.map)\n\t    20 main (/a)\n\n"
            text += "app 2 \(i).5: 1 cycles:\n\t  10 Lcom/x/Y;.f(I)V (/tmp/perf-1.map)\n\t    20 main (/a)\n\n"
        }
        let folded = try FoldFixture.foldBytes(Array(text.utf8)) { $0.perf.annotateJIT = true }
        #expect(folded == "app;main;Lcom/x/Y:.f_[j] 3\njava;main;com/x/Y:.f_[j] 3\n")
    }

    @Test func framesThatNeverRepeatFoldTheSame() throws {
        // More than 2^17 distinct frame lines: the cache gives up and the result does not change.
        var text = ""
        for i in 0..<70_000 {
            text += "app 2 \(i).5: 1 cycles:\n\t\(String(i, radix: 16)) leaf\(i % 3)+0x1 (/a)\n\t\(String(i + 1, radix: 16)) main (/a)\n\n"
        }
        let folded = try FoldFixture.foldBytes(Array(text.utf8))
        #expect(folded == "app;main;leaf0 23334\napp;main;leaf1 23333\napp;main;leaf2 23333\n")
    }
}
