// stallprof-bench-capture: measures the capture path. Driven by tools/bench-capture.sh, which prints the figures.
//
//   stallprof-bench-capture stop [SAMPLES] [DEPTH]          main-thread stop per sample against the signal floor
//   stallprof-bench-capture slowdown [BLOCKS] [WINDOW_MS] [control]
//                                                           busy main thread sampled at 100 Hz and 1 kHz; control:
//                                                           the sampler wakes at each rate but sends no request
//   stallprof-bench-capture idle [PAIRS] [SECONDS] [LOOP]   watchdog on an idle app (child processes); LOOP is
//                                                           runloop (RunLoop.main, default), dispatch or async
//   stallprof-bench-capture idle-child SECONDS 0|1 LOOP     one such child (used by `idle`)
//   stallprof-bench-capture targets [PAIRS] [SECONDS] [KIND] idle event loops watched as targets or not: 1, 8 and
//                                                           64; then the idle cooperative pool watched or not. KIND:
//                                                           epoll (NIO's shape, default), futex (a condition
//                                                           variable's wait: SerialThread) or queue (serial
//                                                           DispatchQueues watched with `.queue`)
//   stallprof-bench-capture targets-child SECONDS N 0|1 KIND one such child (used by `targets`)
import Foundation

let arguments = CommandLine.arguments
func argument(_ i: Int, _ fallback: Double) -> Double {
    guard arguments.count > i else { return fallback }
    guard let v = Double(arguments[i]), v > 0 else {
        FileHandle.standardError.write(Data("stallprof-bench-capture: argument \(i) '\(arguments[i])' is not a positive number\n".utf8))
        exit(64)
    }
    return v
}
switch arguments.count > 1 ? arguments[1] : "" {
case "stop":
    benchStop(samples: Int(argument(2, 2000)), depth: Int(argument(3, 50)))
case "slowdown" where arguments.count < 5 || arguments[4] == "control":
    benchSlowdown(blocks: Int(argument(2, 2400)), windowMs: argument(3, 5), depth: 50,
                  control: arguments.count > 4 && arguments[4] == "control")
case "idle" where arguments.count < 5 || ["runloop", "dispatch", "async"].contains(arguments[4]):
    benchIdle(pairs: Int(argument(2, 3)), seconds: argument(3, 4), loop: arguments.count > 4 ? arguments[4] : "runloop")
case "targets" where arguments.count < 5 || ["epoll", "futex", "queue"].contains(arguments[4]):
    let kind = arguments.count > 4 ? arguments[4] : "epoll"
    benchTargets(pairs: Int(argument(2, 3)), seconds: argument(3, 4), counts: kind == "epoll" ? [1, 8, 64, 0] : [1, 8, 64], kind: kind)
case "targets-child" where arguments.count == 6:
    targetsChild(
        seconds: argument(2, 4), loops: arguments[3] == "pool" ? 0 : Int(argument(3, 1)), watched: arguments[4] == "1",
        pool: arguments[3] == "pool", epoll: arguments[5] == "epoll", queues: arguments[5] == "queue")
case "idle-child" where arguments.count == 5:
    idleChild(seconds: argument(2, 4), watchdog: arguments[3] == "1", loop: arguments[4])
default:
    FileHandle.standardError.write(Data("usage: stallprof-bench-capture stop [SAMPLES] [DEPTH] | slowdown [BLOCKS] [WINDOW_MS] [control] | idle [PAIRS] [SECONDS] [runloop|dispatch|async] | targets [PAIRS] [SECONDS] [epoll|futex|queue]\n".utf8))
    exit(64)
}
