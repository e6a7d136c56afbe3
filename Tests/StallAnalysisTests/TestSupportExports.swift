@_exported import StallTestSupport
