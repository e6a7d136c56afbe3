import StallFormat

/// Writes Perfetto's native trace (`perfetto.protos.Trace`, a stream of `TracePacket`s), which the Perfetto UI and
/// trace processor open: a track per process and per thread (`TrackDescriptor`s), each episode a slice on its
/// thread's track (a capture's in category `stall`, with its number, kind, state, samples, CPU ratio and what it
/// waited for as arguments; a perf thread's extent in category `profile`), each marker an instant or a slice on its
/// thread, and each sample a `PerfSample` at its time on its thread, its stack interned once (function names,
/// mappings, frames, callstacks), so selecting a range in the UI shows the samples in it as a flame graph. Times
/// are nanoseconds from the timeline's start (the capture's, or a perf recording's first sample) on the default
/// trace clock. Slices that would cross on a track are clipped as for Chrome traces (``SliceNesting``), and the clipped
/// slice's arguments say by how much. See docs/EXPORT.md.
///
/// Perfetto samples carry no weight: only timed input (captures, perf script text) can be exported. Untimed input
/// (folded stacks, speedscope, macOS `sample`) is refused with a pointer to the formats that keep its counts.
public struct PerfettoExporter: ProfileExporter {
    /// Options for Perfetto output. Every field documents its default.
    public struct Options: Sendable {
        /// Write the samples and their interned stacks. Default: true.
        public var samples = true

        /// Creates the default options.
        public init() {}
    }

    /// The options in use.
    public let options: Options

    /// Creates an exporter.
    public init(options: Options) { self.options = options }

    /// `--format perfetto`.
    public static var format: ExportFormat { .perfetto }
    /// Binary.
    public static var isBinary: Bool { true }
    /// ``ExportOptions/perfetto``.
    public static func options(in export: ExportOptions) -> Options { export.perfetto }

    /// The one packet sequence this writer uses.
    static let sequence: UInt64 = 1

    /// Writes the trace of `timeline`: the first packet clears the sequence's incremental state, then the tracks,
    /// the slices and instants in time order, then the samples, each packet carrying the interned data it is the
    /// first to use.
    public func export(_ timeline: Timeline, to sink: ByteSink, diagnostics: inout Diagnostics) throws {
        guard timeline.isTimed else {
            throw StallError.usage("perfetto needs timed samples (captures, perf script text with times); "
                + "\(timeline.name) has no timed samples: export it as speedscope, pprof or chrome-trace, which keep "
                + "its counts")
        }
        var out = ProtobufWriter()
        func packet(_ body: (inout ProtobufWriter) -> Void) {
            out.message(1) { packet in
                body(&packet)
                packet.uint(10, Self.sequence)  // trusted_packet_sequence_id
            }
        }
        packet { first in
            first.uint(13, 1)  // sequence_flags: SEQ_INCREMENTAL_STATE_CLEARED
            first.bool(87, true)  // first_packet_on_sequence
        }
        let tracks = PerfettoTracks(timeline)
        for descriptor in tracks.descriptors { packet { $0.message(60, descriptor) } }  // track_descriptor
        for event in PerfettoSlices.events(of: timeline, tracks: tracks) {
            packet { packet in
                packet.present(8, Int64(clamping: event.time))  // timestamp, written even at 0
                packet.message(11, event.body)  // track_event
            }
            try out.drain(into: sink)
        }
        if options.samples {
            var interner = PerfettoInterner(timeline)
            for episode in timeline.episodes {
                let pid = Int64(episode.pid ?? 0), tid = Int64(episode.tid ?? 0)
                for sample in episode.samples where sample.count > 0 && sample.stack != 0 {
                    let interned = interner.intern(sample.stack)
                    packet { packet in
                        packet.present(8, Int64(clamping: sample.timestampNs ?? episode.startNs ?? 0))
                        packet.message(66) { perf in  // perf_sample
                            perf.present(2, pid)
                            perf.present(3, tid)
                            perf.uint(4, UInt64(sample.stack))  // callstack_iid: the stack's leaf node
                        }
                        if !interned.isEmpty { packet.bytes(12, interned) }  // interned_data
                        packet.uint(13, 2)  // sequence_flags: SEQ_NEEDS_INCREMENTAL_STATE
                    }
                    try out.drain(into: sink)
                }
            }
        }
        try out.drain(into: sink, atLeast: 0)
        try sink.flush()
    }
}

/// The process and thread tracks of a timeline: one per process and one per thread that has an episode or a
/// marker, uuids numbered from 1 (processes) and from 2^32 (threads).
struct PerfettoTracks {
    /// Each thread's track uuid, by (pid, tid).
    private(set) var threads: [Int64: UInt64] = [:]
    /// The `TrackDescriptor` messages, processes first.
    private(set) var descriptors: [(inout ProtobufWriter) -> Void] = []

    init(_ timeline: Timeline) {
        var pairs = Set<Int64>()
        let fallback = timeline.episodes.first?.pid ?? 0
        for episode in timeline.episodes { pairs.insert(Timeline.threadKey(pid: episode.pid ?? 0, tid: episode.tid ?? 0)) }
        for marker in timeline.markers {
            let pid = marker.pid ?? fallback
            pairs.insert(Timeline.threadKey(pid: pid, tid: marker.tid ?? pid))
        }
        var processes: [Int32: UInt64] = [:]
        for pair in pairs.sorted() {
            let (pid, tid) = (Int32(truncatingIfNeeded: pair >> 32), Int32(truncatingIfNeeded: pair))
            if processes[pid] == nil {
                let uuid = UInt64(processes.count + 1)
                processes[pid] = uuid
                descriptors.append { track in
                    track.uint(1, uuid)
                    track.message(3) { descriptor in  // ProcessDescriptor
                        descriptor.present(1, Int64(pid))
                        descriptor.string(6, timeline.processName(pid: pid))
                    }
                }
            }
            let uuid = UInt64(1) << 32 + UInt64(threads.count + 1)
            threads[pair] = uuid
            let name = timeline.threadName(pid: pid, tid: tid)
            descriptors.append { [parent = processes[pid]!] track in
                track.uint(1, uuid)
                track.uint(5, parent)  // parent_uuid
                track.message(4) { descriptor in  // ThreadDescriptor
                    descriptor.present(1, Int64(pid))
                    descriptor.present(2, Int64(tid))
                    descriptor.string(5, name)
                }
            }
        }
    }

    /// The thread track of `pid`'s thread `tid`.
    func track(pid: Int32, tid: Int32) -> UInt64 { threads[Timeline.threadKey(pid: pid, tid: tid)] ?? 0 }
}

extension ExportFormat {
    /// Perfetto's native protobuf trace (TracePacket): episodes and markers on thread tracks, every sample with its
    /// stack at its time (the UI's flame graph of a selected range). Timed input only.
    public static let perfetto = ExportFormat(name: "perfetto")
}
