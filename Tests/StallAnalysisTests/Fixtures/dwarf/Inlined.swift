// Source-line fixture (SourceLinesTests): compiled at test time with -O -g, so that `scale` is inlined into `mix`
// and `mix` into `entry`: Swift nests its functions in the module's DW_TAG_module, where dwarf_getscopes does not
// look. The test compares stallprof's frames at every address of `entry` with llvm-symbolizer's.
@inline(__always) func scale(_ value: UInt32) -> UInt32 {
    let result = value &* 2_654_435_761
    return result ^ (result >> 13)
}

@inline(__always) func mix(_ value: UInt32, rounds: UInt32) -> UInt32 {
    var value = value
    for index in 0..<rounds {
        value = scale(value &+ index)
    }
    return value
}

@_cdecl("entry") public func entry(_ value: UInt32, _ rounds: UInt32) -> UInt32 {
    let first = mix(value, rounds: rounds)
    return mix(first ^ 0x5bd1_e995, rounds: rounds &+ 1)
}
