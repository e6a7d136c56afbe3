import Foundation
import StallAnalysis
import StallFormat
import Testing

/// The capture handler's unwinder on a lock owner it knows nothing of (never prepared: unknown stack bounds), in
/// code loaded at run time: `watchdog-trials plugins`, with plugins assembled here by the system's C compiler.
/// Each owner runs on a stack with unreadable memory right above it; a read there ends the process.
#if arch(x86_64)
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/cc"), "needs a C compiler"))
struct UnwinderPluginTests {
    /// A plugin: `plugin_work(callback)` made of `body` (between .cfi_startproc and .cfi_endproc), then `more`.
    static func plugin(body: String, more: String = "") -> String {
        """
            .text
            .globl plugin_work
            .type plugin_work,@function
            .p2align 4
        plugin_work:
            .cfi_startproc
        \(body)
            .cfi_endproc
            .size plugin_work, .-plugin_work
        \(more)
            .section .note.GNU-stack,"",@progbits
        """
    }

    /// A frame of 8 KiB (and 8 bytes: the callee's stack stays 16-byte aligned): at the return address the CFA is
    /// rsp + 0x2010. A page of padding follows in its code.
    static let largeFrame = plugin(body: """
            sub $0x2008, %rsp
            .cfi_adjust_cfa_offset 0x2008
            call *%rdi
            add $0x2008, %rsp
            .cfi_adjust_cfa_offset -0x2008
            ret
        """, more: "    .space 4096, 0xcc")

    /// A frame-pointer frame whose call returns at the same offset (9) as largeFrame's. Its page of padding is data:
    /// the library maps as largeFrame's does (the loader puts it at the same address), its unwind table a page lower.
    static let framePointer = plugin(body: """
            push %rbp
            .cfi_adjust_cfa_offset 8
            .cfi_offset %rbp, -16
            mov %rsp, %rbp
            .cfi_def_cfa_register %rbp
            nop
            nop
            nop
            call *%rdi
            pop %rbp
            .cfi_def_cfa %rsp, 8
            ret
        """, more: "    .data\n    .space 4096")

    /// Hand-written code whose unwind information forgets its stack adjustment (the CIE's CFA = rsp + 8 throughout):
    /// where the rules expect the return address lies a code address whose rules give a 64 KiB frame.
    static let wrongRules = plugin(body: """
            sub $0x1008, %rsp
            lea big_return(%rip), %rax
            mov %rax, (%rsp)
            call *%rdi
            add $0x1008, %rsp
            ret
        """, more: """
            .p2align 4
        big_frame:
            .cfi_startproc
            sub $0x10008, %rsp
            .cfi_adjust_cfa_offset 0x10008
            call *%rdi
        big_return:
            add $0x10008, %rsp
            .cfi_adjust_cfa_offset -0x10008
            ret
            .cfi_endproc
        """)

    /// Assembles `source` into a shared library in the temporary directory.
    static func build(_ source: String, _ name: String) throws -> String {
        let assembly = TestSupport.temporaryPath("\(name).s"), library = TestSupport.temporaryPath("\(name).so")
        defer { unlink(assembly) }
        try source.write(toFile: assembly, atomically: true, encoding: .utf8)
        let result = try TestSupport.run(
            URL(fileURLWithPath: "/usr/bin/cc"), ["-shared", "-nostdlib", "-o", library, assembly])
        try #require(result.status == 0, "cc: \(result.stderr)")
        return library
    }

    struct Run {
        var status: Int32
        var stderr: String
        var capture: Capture?
        /// Each stall's lock owner's stack, root first.
        var owners: [[String]]
    }

    /// Runs `watchdog-trials plugins` with `libraries`.
    static func run(_ libraries: [String]) throws -> Run {
        let path = TestSupport.temporaryPath("plugins.stalls")
        defer { unlink(path) }
        let result = try TestSupport.run(
            TestSupport.productsDirectory.appendingPathComponent("watchdog-trials"), ["plugins"] + libraries,
            environment: [EnvironmentName.output: path, EnvironmentName.threshold: "150", EnvironmentName.interval: "5"])
        let capture = result.status == 0 ? try CaptureReader.read(path: path) : nil
        let owners = capture.map { capture in
            capture.stalls.compactMap { stall in
                stall.blockedOn.map { Symbolizer(images: capture.images).rootFirstNames(leafFirst: $0.ownerFrames) }
            }
        } ?? []
        return Run(status: result.status, stderr: result.stderr, capture: capture, owners: owners)
    }

    /// A plugin unloaded and another loaded at its address between two stalls: the rules the handler cached for
    /// the first plugin's return address must not be applied to the second's code. They were (the cache was emptied
    /// only when a stall ended): the 8 KiB frame's CFA put the read 8 KiB above the owner's stack pointer, past its
    /// stack, and the process died of SIGSEGV inside the handler. (Now the read would stay below the owner's thread
    /// descriptor and end the walk early; the stack must be whole.)
    @Test func aPluginLoadedWhereAnotherWasIsWalkedWithItsOwnRules() throws {
        let first = try Self.build(Self.largeFrame, "large-frame"), second = try Self.build(Self.framePointer, "frame-pointer")
        defer {
            unlink(first)
            unlink(second)
        }
        let run = try Self.run([first, second])
        #expect(run.status == 0, "\(run.status): \(run.stderr)")
        let addresses = run.stderr.split(separator: "\n").filter { $0.hasPrefix("plugin_work of") }.map { $0.split(separator: " ").last }
        try #require(addresses.count == 2 && addresses[0] == addresses[1], "the loader put the second plugin elsewhere: \(run.stderr)")
        try #require(run.owners.count == 2, "\(run.owners)")
        for stack in run.owners {
            // From clone3 through the trial's frame that called the plugin, the plugin's frame, to the callback.
            let at = try #require(stack.firstIndex(of: "plugin_work"), "\(stack)")
            #expect(at > 0 && stack[at - 1].contains("runPluginOwner"), "\(stack)")
            #expect(stack.first?.contains("clone3") == true, "\(stack)")
        }
    }

    /// Wrong unwind information on a thread of unknown bounds: its walk must end, not read where the wrong rules
    /// point. It read 64 KiB above the owner's stack pointer (the bound was "8 MiB above it") and the process died.
    @Test func wrongUnwindInformationOnAThreadOfUnknownBoundsEndsTheWalk() throws {
        let library = try Self.build(Self.wrongRules, "wrong-rules")
        defer { unlink(library) }
        let run = try Self.run([library])
        #expect(run.status == 0, "\(run.status): \(run.stderr)")
        try #require(run.owners.count == 1, "\(run.owners)")
        #expect(run.owners[0].contains("plugin_work"), "\(run.owners[0])")
    }
}
#endif
