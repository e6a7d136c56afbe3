// chat-freeze: a chat app whose main thread freezes at 100 % CPU when a long streamed reply ends, like the one
// in the post-mortem behind `stallprof bisect` (docs/BISECT.md).
//
//   chat-freeze [--chunk-ms N] [--words N]
//
// On RunLoop.main, it streams a long Markdown reply (about 2,500 words, 25 words every --chunk-ms, default 20)
// into a message list, laying the list out after every chunk, then exits 0. Components read through
// StallFlags (disable them with STALLPROF_DISABLE=a,b): autoscroll, lazy-stack, markdown-cache, and the
// harmless timestamps, avatars, typing-indicator, link-previews, read-receipts, spell-check.
// With autoscroll and lazy-stack both enabled, the final layout never settles (see ChatLayout). With
// STALLPROF_OUTPUT set, the stall watchdog records the freeze.
import Foundation
import StallProfiler

var chunkMilliseconds = 20
var replyWords = 2_500
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let option = arguments.next() {
    guard let value = arguments.next().flatMap(Int.init), value > 0 else {
        FileHandle.standardError.write(Data("usage: chat-freeze [--chunk-ms N] [--words N]\n".utf8))
        exit(64)
    }
    switch option {
    case "--chunk-ms": chunkMilliseconds = value
    case "--words": replyWords = value
    default:
        FileHandle.standardError.write(Data("chat-freeze: unknown option \(option)\n".utf8))
        exit(64)
    }
}

let watchdog: StallWatchdog?
do { watchdog = try StallWatchdog.startFromEnvironment() } catch {
    FileHandle.standardError.write(Data("chat-freeze: \(error)\n".utf8))
    exit(1)
}

let settings = ChatLayout.Settings(
    lazyStack: StallFlags.isEnabled("lazy-stack"), autoscroll: StallFlags.isEnabled("autoscroll"),
    markdownCache: StallFlags.isEnabled("markdown-cache") ? MarkdownCache() : nil,
    timestamps: StallFlags.isEnabled("timestamps"), avatars: StallFlags.isEnabled("avatars"))
let layout = ChatLayout(settings: settings)
var messages = (0..<24).map { Message(author: $0 % 2 == 0 ? "you" : "assistant", text: "Message \($0): " + Reply.filler.prefix(2 + $0 % 5).joined(separator: " ")) }
layout.estimate(from: messages)
if StallFlags.isEnabled("typing-indicator") { messages.append(Message(author: "assistant", text: "…")) }
let replyWordsList = Reply.text(words: replyWords).split(separator: " ", omittingEmptySubsequences: false)
let spellCheck = StallFlags.isEnabled("spell-check")
let linkPreviews = StallFlags.isEnabled("link-previews")
let readReceipts = StallFlags.isEnabled("read-receipts")

messages.append(Message(author: "assistant", text: ""))
let replyIndex = messages.count - 1
layout.pinnedRow = replyIndex
var streamed = 0

/// Appends the next chunk of the reply and lays the list out; at the end, releases the pin, lays out the final
/// state, and exits (so the repeating timer never fires again).
@MainActor func streamNextChunk() {
    let next = min(streamed + 25, replyWordsList.count)
    var text = messages[replyIndex].text
    text += (streamed == 0 ? "" : " ") + replyWordsList[streamed..<next].joined(separator: " ")
    if spellCheck { _ = text.split(separator: " ").count }
    messages[replyIndex].text = text
    streamed = next
    layout.layout(messages)
    guard streamed >= replyWordsList.count else { return }
    if linkPreviews { messages[replyIndex].text += "\n\n- preview: https://example.com" }
    if readReceipts { messages.append(Message(author: "you", text: "Seen")) }
    layout.pinnedRow = nil
    layout.layout(messages)  // the final render: never returns when autoscroll and lazy-stack are both on
    watchdog?.stop()
    exit(0)
}

RunLoop.main.add(
    Timer(timeInterval: Double(chunkMilliseconds) / 1000, repeats: true) { _ in
        MainActor.assumeIsolated { streamNextChunk() }  // RunLoop.main runs on the main thread
    }, forMode: .default)
RunLoop.main.run()
