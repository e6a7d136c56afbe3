import Foundation
import StallFormat
import Testing
@testable import StallAnalysis

/// `export --format perfetto`: Perfetto's TracePacket protobuf, read back here with the tests' own protobuf reader
/// (``ProtoMessage``) the way trace processor reads it: tracks, nested slices per thread track, instants, and every
/// sample a `PerfSample` whose interned callstack spells the sample's stack. (tools/check-perfetto.sh opens the
/// same output in the real Perfetto UI.)
@Suite struct PerfettoExportTests {
    /// A trace read back: its packets, and the interned tables as the sequence builds them up.
    struct Trace {
        var packets: [ProtoMessage] = []
        var names: [UInt64: String] = [:]
        var frames: [UInt64: (name: UInt64, mapping: UInt64, pc: UInt64)] = [:]
        var callstacks: [UInt64: [UInt64]] = [:]
        var mappings: [UInt64: [UInt64]] = [:]
        var paths: [UInt64: String] = [:]
        /// Interned ids that were given twice (Perfetto forbids redefining one).
        var redefined: [String] = []
        /// PerfSamples in file order: timestamp, pid, tid, callstack, and whether every id it needs was interned
        /// before it (or in its own packet).
        var samples: [(time: UInt64, pid: UInt64, tid: UInt64, stack: UInt64, resolved: Bool)] = []

        init(_ bytes: [UInt8]) throws {
            let trace = try #require(ProtoMessage(bytes))
            #expect(trace.fields.allSatisfy { $0.number == 1 }, "a Trace holds packets only")
            packets = trace.messages(1)
            for packet in packets {
                for data in packet.messages(12) { intern(data) }
                for perf in packet.messages(66) {
                    let stack = perf.int(4)
                    let resolved = callstacks[stack].map { ids in
                        ids.allSatisfy { frames[$0].map { names[$0.name] != nil && mappings[$0.mapping] != nil } ?? false }
                    } ?? false
                    #expect(packet.fields.contains { $0.number == 8 }, "every sample has its timestamp, 0 too")
                    samples.append((packet.int(8), perf.int(2), perf.int(3), stack, resolved))
                }
            }
        }

        private mutating func intern(_ data: ProtoMessage) {
            func add<T>(_ table: inout [UInt64: T], _ id: UInt64, _ value: T, _ what: String) {
                if table[id] != nil { redefined.append("\(what) \(id)") }
                table[id] = value
            }
            for name in data.messages(5) { add(&names, name.int(1), name.strings(2).first ?? "", "function name") }
            for path in data.messages(17) { add(&paths, path.int(1), path.strings(2).first ?? "", "path") }
            for mapping in data.messages(19) { add(&mappings, mapping.int(1), mapping.integers(7), "mapping") }
            for frame in data.messages(6) {
                add(&frames, frame.int(1), (frame.int(2), frame.int(3), frame.int(4)), "frame")
            }
            for stack in data.messages(7) { add(&callstacks, stack.int(1), stack.integers(2), "callstack") }
        }

        /// The frame names of callstack `id`, root first.
        func stack(_ id: UInt64) -> [String] { (callstacks[id] ?? []).map { names[frames[$0]?.name ?? 0] ?? "?" } }

        /// The track events in file order: time, type, track, name, category and annotations by name.
        var events: [(time: UInt64, type: UInt64, track: UInt64, name: String, args: [String: ProtoMessage])] {
            packets.flatMap { packet in
                packet.messages(11).map { event in
                    #expect(packet.fields.contains { $0.number == 8 }, "every event has its timestamp, 0 too")
                    let args = Dictionary(event.messages(4).map { ($0.strings(10).first ?? "", $0) }) { a, _ in a }
                    return (packet.int(8), event.int(9), event.int(11), event.strings(23).first ?? "", args)
                }
            }
        }
    }

    static func export(_ timeline: Timeline) throws -> [UInt8] {
        var diagnostics = Diagnostics()
        return try PerfettoExporter(options: .init()).export(timeline, diagnostics: &diagnostics)
    }

    /// The long-press shape (as measured in samples/long-press) on pid 10, tid 11: touchDown, the longPress
    /// callback's interval, a busy stall that ends just after it, touchUp; and a sample every 100 ms of the stall
    /// in two stacks.
    static func longPress() -> Timeline {
        var stacks = TimelineStacks()
        let root = [TimelineFrame(name: "main", image: "/app/long-press", address: 0x1010),
                    TimelineFrame(name: "RunLoop.run", image: "/usr/lib/libFoundation.so", address: 0x7f00_0000_2000)]
        let spin = stacks.node(for: root + [TimelineFrame(name: "commitSelection", image: "/app/long-press", address: 0x1200)])
        let layout = stacks.node(for: root + [TimelineFrame(name: "layout", address: 0x99)])
        let samples = (0..<5).map { index in
            TimelineSample(timestampNs: 700_000_000 + UInt64(index) * 100_000_000, stack: index % 2 == 0 ? spin : layout)
        }
        let episode = TimelineEpisode(id: 1, kind: .stall, state: .busy, startNs: 694_636_031, durationNs: 456_675_216,
                                      pid: 10, tid: 11, cpuRatio: 0.98, samples: samples)
        let markers = [
            TimelineMarker(name: "touchDown", extent: .instant, startNs: 300_100_336, pid: 10, tid: 11),
            TimelineMarker(name: "longPress", extent: .interval(durationNs: 501_001_715), startNs: 650_257_000,
                           pid: 10, tid: 11),
            TimelineMarker(name: "touchUp", extent: .instant, startNs: 1_151_326_313, pid: 10, tid: 11),
        ]
        let images = [ImageRecord(path: "/app/long-press", loadBias: 0, start: 0x1000, end: 0x5000, buildID: [1, 2, 3]),
                      ImageRecord(path: "/usr/lib/libFoundation.so", loadBias: 0x7f00_0000_0000, start: 0x7f00_0000_0000,
                                  end: 0x7f00_0001_0000, buildID: [])]
        return Timeline(name: "press.stalls", isTimed: true, executable: "/app/long-press", episodes: [episode],
                        stacks: stacks, markers: markers, images: images)
    }

    @Test func tracksSlicesAndInstantsAreWhatTraceProcessorNests() throws {
        let trace = try Trace(Self.export(Self.longPress()))
        let first = try #require(trace.packets.first)
        #expect(first.int(13) == 1 && first.int(87) == 1, "the first packet clears the sequence's state")
        #expect(trace.packets.allSatisfy { $0.int(10) == 1 }, "one sequence")
        let descriptors = trace.packets.flatMap { $0.messages(60) }
        let process = try #require(descriptors.first { !$0.messages(3).isEmpty })
        #expect(process.messages(3)[0].int(1) == 10 && process.messages(3)[0].strings(6) == ["long-press"])
        let thread = try #require(descriptors.first { !$0.messages(4).isEmpty })
        let threadDescriptor = thread.messages(4)[0]
        #expect(threadDescriptor.int(1) == 10 && threadDescriptor.int(2) == 11)
        #expect(threadDescriptor.strings(5) == ["main queue (tid 11)"] && thread.int(5) == process.int(1))

        let events = trace.events
        #expect(events.allSatisfy { $0.track == thread.int(1) }, "all on the thread's track")
        #expect(zip(events, events.dropFirst()).allSatisfy { $0.time <= $1.time }, "in time order")
        // Begins (1) and ends (2) nest as a stack; instants (3) between them.
        var open: [String] = []
        var shape: [String] = []
        for event in events {
            switch event.type {
            case 1: open.append(event.name); shape.append("+" + event.name)
            case 2: shape.append("-" + (open.popLast() ?? "?"))
            default: shape.append(event.name)
            }
        }
        #expect(open.isEmpty)
        #expect(shape == ["touchDown", "+longPress", "+busy stall", "-busy stall", "-longPress", "touchUp"])
        // The stall ended 52.532 us after the callback: clipped to it, and it says so.
        let begin = try #require(events.first { $0.type == 1 && $0.name == "busy stall" })
        let end = try #require(events.first { $0.type == 2 && $0.time >= begin.time })
        #expect(begin.time == 694_636_031 && end.time == 650_257_000 + 501_001_715)
        #expect(begin.args["clippedNs"]?.int(4) == 52_532 && begin.args["recordedDurNs"]?.int(4) == 456_675_216)
        #expect(begin.args["state"]?.strings(6) == ["busy"] && begin.args["kind"]?.strings(6) == ["stall"])
        #expect(begin.args["cpuRatio"]?.double(5) == 0.98 && begin.args["samples"]?.int(4) == 5)
    }

    @Test func everySampleIsAPerfSampleWhoseInternedStackSpellsItsFrames() throws {
        let timeline = Self.longPress()
        let trace = try Trace(Self.export(timeline))
        #expect(trace.redefined.isEmpty, "\(trace.redefined)")
        let samples = timeline.episodes[0].samples
        #expect(trace.samples.count == samples.count)
        for (read, sample) in zip(trace.samples, samples) {
            #expect(read.time == sample.timestampNs && read.pid == 10 && read.tid == 11)
            #expect(read.resolved, "interned before use")
            #expect(trace.stack(read.stack) == timeline.frames(of: sample).map(\.name))
        }
        // Each image is a mapping with its path; a frame's pc is its address in the image.
        let commit = try #require(trace.frames.values.first { trace.names[$0.name] == "commitSelection" })
        #expect(commit.pc == 0x200)
        #expect(trace.mappings[commit.mapping]?.map { trace.paths[$0] ?? "?" } == ["app", "long-press"])
        let layout = try #require(trace.frames.values.first { trace.names[$0.name] == "layout" })
        #expect(trace.mappings[layout.mapping] == [], "a frame without an image: a mapping without a path")
        // Stacks are interned once: the second sample of a stack brings no interned data.
        let interned = trace.packets.filter { !$0.messages(66).isEmpty }.map { !$0.messages(12).isEmpty }
        #expect(interned == [true, true, false, false, false])
    }

    @Test func untimedInputIsRefusedWithThePlacesItsCountsGo() throws {
        var stacks = FoldedStacks()
        stacks.add(frames: ["main", "work"], count: 3)
        let timeline = TimelineBuilder.build(folded: stacks, name: "app.folded")
        #expect {
            try Self.export(timeline)
        } throws: { error in
            guard case StallError.usage(let message) = error else { return false }
            return message.contains("app.folded") && message.contains("speedscope, pprof or chrome-trace")
        }
    }

    @Test func noSamplesLeavesTheSlices() throws {
        var options = PerfettoExporter.Options()
        options.samples = false
        var diagnostics = Diagnostics()
        let trace = try Trace(PerfettoExporter(options: options).export(Self.longPress(), diagnostics: &diagnostics))
        #expect(trace.samples.isEmpty && trace.events.count == 6)
    }
}
