#if canImport(Glibc)
import Glibc
#endif
import StallAnalysis
import StallFormat

/// `-o SOCKET`: a Unix stream socket is connected to (when the result is ready) and written, never replaced.
enum OutputSocket {
    /// A stream socket connected to the Unix socket at `target`.
    static func connect(_ target: String, shownAs path: String) throws -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name = Array(target.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard name.count < capacity else { throw StallError.output(path: path, reason: "socket path too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in name.enumerated() { raw[index] = byte }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Output.failure(path) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let error = Output.failure(path)
            close(fd)
            throw error
        }
        return fd
    }
}
