// stallprof-bench-symbolize: the addresses a capture's samples hold, as llvm-symbolizer reads them on standard
// input, one `"IMAGE" 0xADDRESS` line for each distinct frame (the file address: the sampled address less its
// image's load bias; a return address, every frame but the leaf, less one, as stallprof looks it up). Addresses in
// no image, or in an image that is no file (the vDSO), are left out. tools/bench-symbolize.sh times llvm-symbolizer
// on them against `stallprof fold --lines --inline`.
//
//   stallprof-bench-symbolize CAPTURE
import Foundation
import StallFormat

guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: stallprof-bench-symbolize CAPTURE\n".utf8))
    exit(64)
}
let capture = try CaptureReader.read(path: CommandLine.arguments[1])
let images = capture.images.filter { $0.path.hasPrefix("/") }.sorted { $0.start < $1.start }
var seen = Set<UInt64>()
var out = ""
for stall in capture.stalls {
    for sample in stall.samples {
        for (index, raw) in sample.frames.enumerated() {
            let address = index > 0 && raw > 0 ? raw - 1 : raw
            guard seen.insert(address).inserted,
                  let image = images.last(where: { $0.start <= address }), address < image.end else { continue }
            out += "\"\(image.path)\" 0x\(String(address - image.loadBias, radix: 16))\n"
        }
    }
}
FileHandle.standardOutput.write(Data(out.utf8))
