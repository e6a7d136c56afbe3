import Foundation
@testable import StallAnalysis

/// A minimal protocol buffers reader for the tests: enough of pprof's Profile to check what the exporter wrote,
/// without trusting the exporter's own encoder.
struct ProtoMessage {
    /// Fields in order: number, and either a varint or length-delimited bytes.
    var fields: [(number: Int, varint: UInt64?, bytes: [UInt8]?)] = []

    /// Parses `bytes`; nil when they are not well-formed (an unknown wire type, a truncated field).
    init?(_ bytes: [UInt8]) {
        var at = 0
        func varint() -> UInt64? {
            var value: UInt64 = 0, shift: UInt64 = 0
            while at < bytes.count, shift < 64 {
                let byte = bytes[at]
                at += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
            return nil
        }
        while at < bytes.count {
            guard let key = varint() else { return nil }
            let number = Int(key >> 3)
            switch key & 7 {
            case 0:
                guard let value = varint() else { return nil }
                fields.append((number, value, nil))
            case 1:  // fixed64 (a double): its eight bytes, as `bytes`
                guard at + 8 <= bytes.count else { return nil }
                fields.append((number, nil, Array(bytes[at..<at + 8])))
                at += 8
            case 2:
                guard let length = varint(), at + Int(length) <= bytes.count else { return nil }
                fields.append((number, nil, Array(bytes[at..<at + Int(length)])))
                at += Int(length)
            default: return nil
            }
        }
    }

    /// Every embedded message in field `number`.
    func messages(_ number: Int) -> [ProtoMessage] {
        fields.filter { $0.number == number }.compactMap { $0.bytes.flatMap(ProtoMessage.init) }
    }

    /// Every string in field `number`.
    func strings(_ number: Int) -> [String] {
        fields.filter { $0.number == number }.compactMap { $0.bytes.map { String(decoding: $0, as: UTF8.self) } }
    }

    /// The double in field `number` (a fixed64 field); nil when absent.
    func double(_ number: Int) -> Double? {
        guard let bytes = fields.last(where: { $0.number == number })?.bytes, bytes.count == 8 else { return nil }
        return Double(bitPattern: bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) })
    }

    /// The varint in field `number` (0 when absent, as proto3 reads it).
    func int(_ number: Int) -> UInt64 { fields.last { $0.number == number }?.varint ?? 0 }

    /// The integers of field `number`, packed or not.
    func integers(_ number: Int) -> [UInt64] {
        fields.filter { $0.number == number }.flatMap { field -> [UInt64] in
            if let value = field.varint { return [value] }
            var values: [UInt64] = [], value: UInt64 = 0, shift: UInt64 = 0
            for byte in field.bytes ?? [] {
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 {
                    values.append(value)
                    value = 0
                    shift = 0
                } else {
                    shift += 7
                }
            }
            return values
        }
    }
}

/// External readers the export tests use when they are installed.
enum ExportTools {
    /// The path of `name` on PATH, or nil.
    static func which(_ name: String) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return paths.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The shared format specifications (../shared/formats beside the repository), when present.
    static let formats: String? = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        let path = url.appendingPathComponent("shared/formats").path
        return FileManager.default.fileExists(atPath: path + "/profile.proto") ? path : nil
    }()

    /// The repository's tools/ directory.
    static let toolsDirectory: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.appendingPathComponent("tools").path
    }()

    /// Python with jsonschema importable (the venv tools/check-export.sh makes, or the system's), or nil.
    static let pythonWithJSONSchema: String? = {
        var url = URL(fileURLWithPath: toolsDirectory).deletingLastPathComponent()
        url.appendPathComponent(".build/export-venv/bin/python")
        for candidate in [url.path, which("python3")].compactMap({ $0 }) {
            if let (status, _, _) = try? run(candidate, ["-c", "import jsonschema"]), status == 0 { return candidate }
        }
        return nil
    }()

    /// Runs `executable` with `arguments` and `input`; the exit status, standard output and standard error.
    static func run(_ executable: String, _ arguments: [String], input: [UInt8] = [],
                    environment: [String: String] = [:]) throws -> (Int32, [UInt8], String) {
        let r = try ProcessRunner.run(executable, arguments, input: input, environment: environment)
        return (r.status, r.bytes, r.err)
    }

    /// Writes `bytes` to a new temporary file and returns its path.
    static func temporary(_ bytes: [UInt8], suffix: String) throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("export-\(getpid())-\(UUID().uuidString)\(suffix)").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }
}
