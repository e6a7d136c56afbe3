import StallSamples

/// A dedicated thread that runs posted blocks one after another, standing in for the main thread in tests.
typealias StandInMainThread = SerialThread
