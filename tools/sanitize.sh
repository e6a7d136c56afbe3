#!/usr/bin/env bash
# Runs the test suite under a sanitizer: `tools/sanitize.sh thread|address [swift test options]`.
# Builds every product (the tests run the sample apps and the CLI as subprocesses from the same products
# directory, so they are instrumented too) in its own scratch path, .build/sanitize-KIND, apart from the normal build.
# Exits non-zero when a test fails or the sanitizer reports anything (a report makes the process exit non-zero).
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-}"
case "$kind" in
    thread|address) shift ;;
    *) echo "usage: tools/sanitize.sh thread|address [swift test options]" >&2; exit 64 ;;
esac
scratch=".build/sanitize-$kind"
tools/setup.sh
# halt_on_error: the first report fails the run. Two settings, not suppressions of reports:
# - detect_leaks=0: LeakSanitizer's reports on this suite come from the toolchain's libraries (seen: XCTest's
#   XCTMainMisc/XCTestSuiteRun objects, the weak reference Foundation.Process.run forms), not from this project.
# - use_sigaltstack=0: ASan would give every thread an alternate signal stack of its own, and
#   HostSurvivalTests checks that a fresh thread has none until stallprof installs its 64 KiB one.
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=0:use_sigaltstack=0}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1}"
# Tests TSan's runtime cannot host (`thread` only; each --skip names one test, or chat-freeze's family). What breaks
# them is TSan itself, seen on this machine:
# - It delivers an asynchronous signal late: at the thread's next intercepted call, on the thread's current stack,
#   with the context saved when the signal arrived (stale by then). Samples miss, or unwind from that stale context.
# - With the (instrumented, slower) watchdog thread running, the main thread sleeps a few times a second on a Swift
#   runtime lock (once_slow in metadata set-up) that thread holds; none without the watchdog or in the normal
#   build (measured with cell-height). A saturated main thread is one that never sleeps for 1 s.
# chatFreeze: as under ASan (.ci/run), chat-freeze streams its reply slower than the bisects' 5 s window; its report
#   test wants the driver in most signal samples.
# busyStallShowsTheRecursionInOrder: wants every deep sample to end in BusyWork.burn (stale contexts).
# walksFromSignalContextsAnywhereMatchLibgcc: compares a walk of the signal's context with one from inside the
#   handler; TSan runs the handler later, elsewhere, with the stale context (the two walks cannot agree).
# aOneSecondBusyStallIsSampledFromItsStart: wants a signal sample at least every 150 ms (late signals miss).
# aMainThreadWithEightKiBOfStackLeftIsSampledWithoutCrashing: checks that the handler runs on the alternate signal
#   stack; TSan calls it on the main thread's own stack, with 8 KiB left.
# aLayoutLoopAcrossRunLoopTurnsIsASaturatedEpisodeSampledInThePass, aStallDuringASaturatedEpisodeEndsItAndThey-
#   ShareOneNumbering, aSaturatedMainThreadIsFrozenAndSelfSizingIsTheCause: need a saturated episode (or a main thread
#   saturated for `bisect`), which the runtime-lock sleeps above break up (the last seen failing under load:
#   "not reproducible").
# aForkedChildStartsItsOwnWatchdog: TSan kills a child of a multi-threaded fork that starts a thread ("starting new
#   threads after multi-threaded fork is not supported"), and starting one is the test. (It can hang before that:
#   forked while the slow watchdog thread still held a Swift runtime once-lock of its start-up, the child waits on
#   that lock for ever.) percentPGivesEachProcessOfATreeItsOwnFile, aForkedChildOnItsParentsPathIsRefused: the same
#   trial (its child writing child-%p; its child refused the parent's path). The second's child was seen spinning
#   in TSan's runtime for 60 s (the trial then kills it: exit 4); before that guard such a child hung the run.
# aSpinningOwnerIsSampledOnceWithTheSignal: its lock owner spins in pure computation, which makes no intercepted
#   call, so TSan never delivers the one signal the probe sends it (seen failing in CI: "state R", no stack).
# aPluginLoadedWhereAnotherWasIsWalkedWithItsOwnRules, wrongUnwindInformationOnAThreadOfUnknownBoundsEndsTheWalk: want
#   the lock owner's whole stack, walked from its signal context; TSan runs the handler later with that context
#   stale (seen: an owner's stack "[unknown];[vdso]").
# anAppUnderATinyFileSizeLimitSurvivesAStall: TSan maps the shadow of read-only data from a 512 KiB file it writes
#   to /tmp at start-up; under the test's 4 KiB `ulimit -f` that file is cut short and the app dies of SIGBUS in
#   the runtime before stallprof writes a byte.
# aMainActorSelfWaitGetsTheHint: TSan's own background thread runs during the stall, so "nothing else is running"
#   is false there (the hint rightly stays away).
# theHintNamesTheDependencyAndAppModuleMakesItAppCode: TSan's runtime, linked into the executable, has code without
#   symbols, which counts as the app's (1 % of samples): the "no app code" hint needs at least 90 % without.
skips=()
if [ "$kind" = thread ]; then
    for test in chatFreeze busyStallShowsTheRecursionInOrder walksFromSignalContextsAnywhereMatchLibgcc \
        aOneSecondBusyStallIsSampledFromItsStart \
        aMainThreadWithEightKiBOfStackLeftIsSampledWithoutCrashing aLayoutLoopAcrossRunLoopTurnsIsASaturatedEpisode \
        aStallDuringASaturatedEpisodeEndsItAndTheyShareOneNumbering aSaturatedMainThreadIsFrozenAndSelfSizingIsTheCause \
        aForkedChildStartsItsOwnWatchdog \
        percentPGivesEachProcessOfATreeItsOwnFile aForkedChildOnItsParentsPathIsRefused \
        anAppUnderATinyFileSizeLimitSurvivesAStall \
        aSpinningOwnerIsSampledOnceWithTheSignal aPluginLoadedWhereAnotherWasIsWalkedWithItsOwnRules \
        wrongUnwindInformationOnAThreadOfUnknownBoundsEndsTheWalk \
        aMainActorSelfWaitGetsTheHint theHintNamesTheDependencyAndAppModuleMakesItAppCode; do
        skips+=(--skip "$test")
    done
fi
swift build --sanitize="$kind" --scratch-path "$scratch"
swift test --sanitize="$kind" --scratch-path "$scratch" "${skips[@]}" "$@"
