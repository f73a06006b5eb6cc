import Foundation
import Testing

@testable import TaskIdentity

// The table itself: for every state, what each event does (written by hand from the rules).
extension StateMachineTable {
    /// Per state, the events that do something or trap; every event not listed is `.ignored`.
    static let expectations: [(StateName, [EventName: Expected])] = [
        (
            .fresh,
            [
                .declareEqual: .unchanged,
                .declareNew: .becomes(
                    "startQueued none g1/0 ending0 waiting inQueue | next=queueStart | declared+1 liveGenerations+1"),
                .declareNewDebounced: .becomes(
                    "debouncing none g1/0 ending0 waiting | next=waitForDebounce(deadline: 150) waiting(g1) | declared+1 liveGenerations+1"
                ),
                .declareNewKeepRunning: .becomes(
                    "startQueued none g1/0 ending0 waiting inQueue | next=queueStart | declared+1 liveGenerations+1"),
                .startAllowed: .traps, .runEndedCurrent: .traps, .runEndedCancelled: .traps,
                .remove: .becomes("none none g0/0 ending0 idle removed |  | "),
                .removeAtShutdown: .becomes("none none g0/0 ending0 idle removed |  | "),
                .inheritEndingRuns: .becomes(
                    "none none g0/0 ending1 idle |  | "
                ),
                .previousRunEnded: .traps,
                .startAtLimitFull: .traps, .admitted: .traps,
                .runFailedRetrying: .traps,
                .startAtLimitFree: .traps,
                .runFailedLastAttempt: .traps,
                .runIsShared: .traps,
            ]
        ),
        (
            .debouncing,
            [
                .declareEqual: .unchanged,
                .declareNew: .becomes(
                    "startQueued none g2/0 ending0 waiting inQueue | endedPending(g1 cancelled(supersededByPolicy)) next=queueStart | declared+1 coalesced+1"
                ),
                .declareNewDebounced: .becomes(
                    "debouncing none g2/0 ending0 waiting | endedPending(g1 cancelled(supersededByPolicy)) next=waitForDebounce(deadline: 150) waiting(g2) | declared+1 coalesced+1"
                ),
                .declareNewKeepRunning: .becomes(
                    "startQueued none g2/0 ending0 waiting inQueue | endedPending(g1 cancelled(supersededByPolicy)) next=queueStart | declared+1 coalesced+1"
                ),
                .debounceDue: .becomes("startQueued none g1/0 ending0 waiting inQueue | next=queueStart | "),
                .startAllowed: .traps, .runEndedCurrent: .traps, .runEndedCancelled: .traps,
                .remove: .becomes(
                    "none none g1/0 ending0 cancelled(removed) removed | dropPending endedPending(g1 cancelled(removed)) | cancelled+1 liveGenerations-1"
                ),
                .removeAtShutdown: .becomes(
                    "none none g1/0 ending0 cancelled(registryShutDown) removed | dropPending endedPending(g1 cancelled(registryShutDown)) | cancelled+1 liveGenerations-1"
                ),
                .cancelByCaller: .becomes(
                    "none none g1/0 ending0 cancelled(cancelledByCaller) | dropPending endedPending(g1 cancelled(cancelledByCaller)) | cancelled+1 liveGenerations-1"
                ),
                .dropPending: .becomes(
                    "none none g1/0 ending0 cancelled(pendingDropped) | dropPending endedPending(g1 cancelled(pendingDropped)) | cancelled+1 liveGenerations-1"
                ),
                .runNow: .becomes(
                    "startQueued none g1/0 ending0 waiting inQueue | next=queueStart | "
                ),
                .inheritEndingRuns: .traps,
                .previousRunEnded: .traps,
                .startAtLimitFull: .traps, .admitted: .traps,
                .runFailedRetrying: .traps,
                .startAtLimitFree: .traps,
                .runFailedLastAttempt: .traps,
                .runIsShared: .traps,
            ]
        ),
        (
            .debouncingWhileRunning,
            [
                .declareEqual: .unchanged,
                .declareNew: .becomes(
                    "startQueued none g3/1 ending1 waiting inQueue | cancelTask endedPending(g2 cancelled(supersededByPolicy)) endedRun(g1 cancelled(identityChanged)) next=queueStart | declared+1 coalesced+1 cancelled+1 liveGenerations-1"
                ),
                .declareNewDebounced: .becomes(
                    "debouncing none g3/1 ending1 waiting | cancelTask endedPending(g2 cancelled(supersededByPolicy)) endedRun(g1 cancelled(identityChanged)) next=waitForDebounce(deadline: 150) waiting(g3) | declared+1 coalesced+1 cancelled+1 liveGenerations-1"
                ),
                .declareNewKeepRunning: .becomes(
                    "awaitingPrevious task g3/1 ending0 waiting | endedPending(g2 cancelled(supersededByPolicy)) next=waitForPrevious waiting(g3) | declared+1 coalesced+1"
                ),
                .debounceDue: .becomes("awaitingPrevious task g2/1 ending0 waiting | next=waitForPrevious | "),
                .startAllowed: .traps,
                .runEndedCurrent: .becomes(
                    "debouncing none g2/1 ending0 waiting | dropTask endedRun(g1 finished) | finished+1 runningActions-1 liveGenerations-1"
                ),
                .runEndedCancelled: .traps,
                .remove: .becomes(
                    "none none g2/1 ending1 cancelled(removed) removed | cancelTask dropPending endedPending(g2 cancelled(removed)) endedRun(g1 cancelled(removed)) | cancelled+2 liveGenerations-2"
                ),
                .removeAtShutdown: .becomes(
                    "none none g2/1 ending1 cancelled(registryShutDown) removed | cancelTask dropPending endedPending(g2 cancelled(registryShutDown)) endedRun(g1 cancelled(registryShutDown)) | cancelled+2 liveGenerations-2"
                ),
                .progressDue: .becomes("debouncing task g2/1 ending0 waiting progress | result=true | "),
                .synchronousRunDue: .traps,
                .cancelByCaller: .becomes(
                    "none none g2/1 ending1 cancelled(cancelledByCaller) | cancelTask dropPending endedPending(g2 cancelled(cancelledByCaller)) endedRun(g1 cancelled(cancelledByCaller)) | cancelled+2 liveGenerations-2"
                ),
                .dropPending: .becomes(
                    "none task g2/1 ending0 cancelled(pendingDropped) | dropPending endedPending(g2 cancelled(pendingDropped)) | cancelled+1 liveGenerations-1"
                ),
                .runNow: .becomes(
                    "awaitingPrevious task g2/1 ending0 waiting | next=waitForPrevious | "
                ),
                .runTimedOut: .becomes(
                    "debouncing none g2/1 ending1 waiting | cancelTask endedRun(g1 cancelled(timedOut)) | cancelled+1 timedOut+1 liveGenerations-1"
                ),
                .inheritEndingRuns: .traps,
                .previousRunEnded: .traps,
                .startAtLimitFull: .traps, .admitted: .traps,
                .runFailedRetrying: .becomes(
                    "debouncing none g2/1 ending0 waiting | dropTask endedRun(g1 failed) | failed+1 runningActions-1 liveGenerations-1"
                ),
                .startAtLimitFree: .traps,
                .runFailedLastAttempt: .becomes(
                    "debouncing none g2/1 ending0 waiting | dropTask endedRun(g1 failed) | failed+1 runningActions-1 liveGenerations-1"
                ),
                .runIsShared: .traps,
            ]
        ),
        (
            .throttled,
            [
                .declareEqual: .unchanged,
                .declareNew: .becomes(
                    "startQueued none g3/1 ending0 waiting inQueue | stopThrottle endedPending(g2 cancelled(supersededByPolicy)) next=queueStart | declared+1 coalesced+1"
                ),
                .declareNewDebounced: .becomes(
                    "debouncing none g3/1 ending0 waiting | stopThrottle endedPending(g2 cancelled(supersededByPolicy)) next=waitForDebounce(deadline: 150) waiting(g3) | declared+1 coalesced+1"
                ),
                .declareNewKeepRunning: .becomes(
                    "startQueued none g3/1 ending0 waiting inQueue | stopThrottle endedPending(g2 cancelled(supersededByPolicy)) next=queueStart | declared+1 coalesced+1"
                ),
                .throttleDue: .becomes("startQueued none g2/1 ending0 waiting inQueue | next=queueStart | "),
                .startAllowed: .traps, .runEndedCurrent: .traps, .runEndedCancelled: .traps,
                .remove: .becomes(
                    "none none g2/1 ending0 cancelled(removed) removed | stopThrottle dropPending endedPending(g2 cancelled(removed)) | cancelled+1 liveGenerations-1"
                ),
                .removeAtShutdown: .becomes(
                    "none none g2/1 ending0 cancelled(registryShutDown) removed | stopThrottle dropPending endedPending(g2 cancelled(registryShutDown)) | cancelled+1 liveGenerations-1"
                ),
                .cancelByCaller: .becomes(
                    "none none g2/1 ending0 cancelled(cancelledByCaller) | stopThrottle dropPending endedPending(g2 cancelled(cancelledByCaller)) | cancelled+1 liveGenerations-1"
                ),
                .dropPending: .becomes(
                    "none none g2/1 ending0 cancelled(pendingDropped) | stopThrottle dropPending endedPending(g2 cancelled(pendingDropped)) | cancelled+1 liveGenerations-1"
                ),
                .runNow: .becomes(
                    "startQueued none g2/1 ending0 waiting inQueue | stopThrottle next=queueStart | "
                ),
                .inheritEndingRuns: .traps,
                .previousRunEnded: .traps,
                .startAtLimitFull: .traps, .admitted: .traps,
                .runFailedRetrying: .traps,
                .startAtLimitFree: .traps,
                .runFailedLastAttempt: .traps,
                .runIsShared: .traps,
            ]
        ),
        (
            .awaitingPrevious,
            [
                .declareEqual: .unchanged,
                .declareNew: .becomes(
                    "startQueued none g3/1 ending1 waiting inQueue | endedPending(g2 cancelled(supersededByPolicy)) next=queueStart | declared+1 coalesced+1"
                ),
                .declareNewDebounced: .becomes(
                    "debouncing none g3/1 ending1 waiting | endedPending(g2 cancelled(supersededByPolicy)) next=waitForDebounce(deadline: 150) waiting(g3) | declared+1 coalesced+1"
                ),
                .declareNewKeepRunning: .becomes(
                    "awaitingPrevious none g3/1 ending1 waiting | endedPending(g2 cancelled(supersededByPolicy)) next=waitForPrevious waiting(g3) | declared+1 coalesced+1"
                ),
                .startAllowed: .traps,
                .runEndedCurrent: .becomes(
                    "startQueued none g2/1 ending0 waiting inQueue | next=queueStart | runningActions-1"),
                .runEndedCancelled: .becomes(
                    "startQueued none g2/1 ending0 waiting inQueue | next=queueStart | runningActions-1"),
                .remove: .becomes(
                    "none none g2/1 ending1 cancelled(removed) removed | dropPending endedPending(g2 cancelled(removed)) | cancelled+1 liveGenerations-1"
                ),
                .removeAtShutdown: .becomes(
                    "none none g2/1 ending1 cancelled(registryShutDown) removed | dropPending endedPending(g2 cancelled(registryShutDown)) | cancelled+1 liveGenerations-1"
                ),
                .cancelByCaller: .becomes(
                    "none none g2/1 ending1 cancelled(cancelledByCaller) | dropPending endedPending(g2 cancelled(cancelledByCaller)) | cancelled+1 liveGenerations-1"
                ),
                .dropPending: .becomes(
                    "none none g2/1 ending1 cancelled(pendingDropped) | dropPending endedPending(g2 cancelled(pendingDropped)) | cancelled+1 liveGenerations-1"
                ),
                .inheritEndingRuns: .traps,
                .previousRunEnded: .becomes(
                    "startQueued none g2/1 ending0 waiting inQueue | next=queueStart | "
                ),
                .startAtLimitFull: .traps, .admitted: .traps,
                .runFailedRetrying: .becomes(
                    "startQueued none g2/1 ending0 waiting inQueue | next=queueStart | runningActions-1"),
                .startAtLimitFree: .traps,
                .runFailedLastAttempt: .becomes(
                    "startQueued none g2/1 ending0 waiting inQueue | next=queueStart | runningActions-1"),
                .runIsShared: .traps,
            ]
        ),
        (
            .queued,
            [
                .declareEqual: .unchanged,
                .declareNew: .becomes(
                    "startQueued none g2/0 ending0 waiting inQueue | endedPending(g1 cancelled(supersededByPolicy)) | declared+1 coalesced+1"
                ),
                .declareNewDebounced: .becomes(
                    "debouncing none g2/0 ending0 waiting inQueue | endedPending(g1 cancelled(supersededByPolicy)) next=waitForDebounce(deadline: 150) waiting(g2) | declared+1 coalesced+1"
                ),
                .declareNewKeepRunning: .becomes(
                    "startQueued none g2/0 ending0 waiting inQueue | endedPending(g1 cancelled(supersededByPolicy)) | declared+1 coalesced+1"
                ),
                .startAllowed: .becomes("none task g1/1 ending0 running | result=g1 | started+1 runningActions+1"),
                .runEndedCurrent: .traps, .runEndedCancelled: .traps,
                .remove: .becomes(
                    "none none g1/0 ending0 cancelled(removed) removed inQueue | dropPending endedPending(g1 cancelled(removed)) | cancelled+1 liveGenerations-1"
                ),
                .removeAtShutdown: .becomes(
                    "none none g1/0 ending0 cancelled(registryShutDown) removed inQueue | dropPending endedPending(g1 cancelled(registryShutDown)) | cancelled+1 liveGenerations-1"
                ),
                .cancelByCaller: .becomes(
                    "none none g1/0 ending0 cancelled(cancelledByCaller) inQueue | dropPending endedPending(g1 cancelled(cancelledByCaller)) | cancelled+1 liveGenerations-1"
                ),
                .dropPending: .becomes(
                    "none none g1/0 ending0 cancelled(pendingDropped) inQueue | dropPending endedPending(g1 cancelled(pendingDropped)) | cancelled+1 liveGenerations-1"
                ),
                .inheritEndingRuns: .traps,
                .previousRunEnded: .traps,
                .startAtLimitFull: .becomes(
                    "startLimited none g1/0 ending0 waiting | waiting(g1) | queued+1 queueLength+1"), .admitted: .traps,
                .runFailedRetrying: .traps,
                .startAtLimitFree: .becomes("startQueued none g1/0 ending0 waiting inQueue | result=start | "),
                .runFailedLastAttempt: .traps,
                .runIsShared: .traps,
            ]
        ),
        (
            .limitQueued,
            [
                .declareEqual: .unchanged,
                .declareNew: .becomes(
                    "startQueued none g2/0 ending0 waiting inQueue | endedPending(g1 cancelled(supersededByPolicy)) next=queueStart | declared+1 coalesced+1 queueLength-1"
                ),
                .declareNewDebounced: .becomes(
                    "debouncing none g2/0 ending0 waiting | endedPending(g1 cancelled(supersededByPolicy)) next=waitForDebounce(deadline: 150) waiting(g2) | declared+1 coalesced+1 queueLength-1"
                ),
                .declareNewKeepRunning: .becomes(
                    "startQueued none g2/0 ending0 waiting inQueue | endedPending(g1 cancelled(supersededByPolicy)) next=queueStart | declared+1 coalesced+1 queueLength-1"
                ),
                .startAllowed: .traps,
                .runEndedCurrent: .traps, .runEndedCancelled: .traps,
                .remove: .becomes(
                    "none none g1/0 ending0 cancelled(removed) removed | dropPending endedPending(g1 cancelled(removed)) | cancelled+1 queueLength-1 liveGenerations-1"
                ),
                .removeAtShutdown: .becomes(
                    "none none g1/0 ending0 cancelled(registryShutDown) removed | dropPending endedPending(g1 cancelled(registryShutDown)) | cancelled+1 queueLength-1 liveGenerations-1"
                ),
                .cancelByCaller: .becomes(
                    "none none g1/0 ending0 cancelled(cancelledByCaller) | dropPending endedPending(g1 cancelled(cancelledByCaller)) | cancelled+1 queueLength-1 liveGenerations-1"
                ),
                .dropPending: .becomes(
                    "none none g1/0 ending0 cancelled(pendingDropped) | dropPending endedPending(g1 cancelled(pendingDropped)) | cancelled+1 queueLength-1 liveGenerations-1"
                ),
                .inheritEndingRuns: .traps,
                .previousRunEnded: .traps,
                .startAtLimitFull: .traps,
                .admitted: .becomes("startQueued none g1/0 ending0 waiting inQueue |  | queueLength-1"),
                .runFailedRetrying: .traps,
                .startAtLimitFree: .traps,
                .runFailedLastAttempt: .traps,
                .runIsShared: .traps,
            ]
        ),
        (
            .retrying,
            [
                .declareEqual: .unchanged,
                .declareNew: .becomes(
                    "startQueued none g2/1 ending0 waiting inQueue | endedPending(g1 cancelled(identityChanged)) next=queueStart | declared+1 cancelled+1"
                ),
                .declareNewDebounced: .becomes(
                    "debouncing none g2/1 ending0 waiting | endedPending(g1 cancelled(identityChanged)) next=waitForDebounce(deadline: 150) waiting(g2) | declared+1 cancelled+1"
                ),
                .declareNewKeepRunning: .becomes(
                    "startQueued none g2/1 ending0 waiting inQueue | endedPending(g1 cancelled(identityChanged)) next=queueStart | declared+1 cancelled+1"
                ),
                .startAllowed: .traps,
                .runEndedCurrent: .traps, .runEndedCancelled: .traps, .runFailedRetrying: .traps,
                .remove: .becomes(
                    "none none g1/1 ending0 cancelled(removed) removed | dropPending endedPending(g1 cancelled(removed)) | cancelled+1 liveGenerations-1"
                ),
                .removeAtShutdown: .becomes(
                    "none none g1/1 ending0 cancelled(registryShutDown) removed | dropPending endedPending(g1 cancelled(registryShutDown)) | cancelled+1 liveGenerations-1"
                ),
                .cancelByCaller: .becomes(
                    "none none g1/1 ending0 cancelled(cancelledByCaller) | dropPending endedPending(g1 cancelled(cancelledByCaller)) | cancelled+1 liveGenerations-1"
                ),
                .dropPending: .becomes(
                    "none none g1/1 ending0 cancelled(pendingDropped) | dropPending endedPending(g1 cancelled(pendingDropped)) | cancelled+1 liveGenerations-1"
                ),
                .inheritEndingRuns: .traps,
                .previousRunEnded: .traps,
                .startAtLimitFull: .traps, .admitted: .traps,
                .retryDue: .becomes("startQueued none g1/1 ending0 waiting inQueue | next=queueStart | "),
                .startAtLimitFree: .traps,
                .runFailedLastAttempt: .traps,
                .runIsShared: .traps,
            ]
        ),
        (
            .supersededInQueue,
            [
                .declareEqual: .unchanged,
                .declareNew: .becomes(
                    "startQueued none g3/0 ending0 waiting inQueue | endedPending(g2 cancelled(supersededByPolicy)) | declared+1 coalesced+1"
                ),
                .declareNewDebounced: .becomes(
                    "debouncing none g3/0 ending0 waiting inQueue | endedPending(g2 cancelled(supersededByPolicy)) next=waitForDebounce(deadline: 150) waiting(g3) | declared+1 coalesced+1"
                ),
                .declareNewKeepRunning: .becomes(
                    "startQueued none g3/0 ending0 waiting inQueue | endedPending(g2 cancelled(supersededByPolicy)) | declared+1 coalesced+1"
                ),
                .debounceDue: .becomes("startQueued none g2/0 ending0 waiting inQueue |  | "),
                .startAllowed: .becomes("debouncing none g2/0 ending0 waiting | result=skip | "),
                .runEndedCurrent: .traps, .runEndedCancelled: .traps,
                .remove: .becomes(
                    "none none g2/0 ending0 cancelled(removed) removed inQueue | dropPending endedPending(g2 cancelled(removed)) | cancelled+1 liveGenerations-1"
                ),
                .removeAtShutdown: .becomes(
                    "none none g2/0 ending0 cancelled(registryShutDown) removed inQueue | dropPending endedPending(g2 cancelled(registryShutDown)) | cancelled+1 liveGenerations-1"
                ),
                .cancelByCaller: .becomes(
                    "none none g2/0 ending0 cancelled(cancelledByCaller) inQueue | dropPending endedPending(g2 cancelled(cancelledByCaller)) | cancelled+1 liveGenerations-1"
                ),
                .dropPending: .becomes(
                    "none none g2/0 ending0 cancelled(pendingDropped) inQueue | dropPending endedPending(g2 cancelled(pendingDropped)) | cancelled+1 liveGenerations-1"
                ),
                .runNow: .becomes(
                    "startQueued none g2/0 ending0 waiting inQueue |  | "
                ),
                .inheritEndingRuns: .traps,
                .previousRunEnded: .traps,
                .startAtLimitFull: .becomes("debouncing none g2/0 ending0 waiting | result=skip | "), .admitted: .traps,
                .runFailedRetrying: .traps,
                .startAtLimitFree: .becomes("debouncing none g2/0 ending0 waiting | result=skip | "),
                .runFailedLastAttempt: .traps,
                .runIsShared: .traps,
            ]
        ),
        (
            .runningTask,
            [
                .declareEqual: .unchanged,
                .declareNew: .becomes(
                    "startQueued none g2/1 ending1 waiting inQueue | cancelTask endedRun(g1 cancelled(identityChanged)) next=queueStart | declared+1 cancelled+1"
                ),
                .declareNewDebounced: .becomes(
                    "debouncing none g2/1 ending1 waiting | cancelTask endedRun(g1 cancelled(identityChanged)) next=waitForDebounce(deadline: 150) waiting(g2) | declared+1 cancelled+1"
                ),
                .declareNewKeepRunning: .becomes(
                    "awaitingPrevious task g2/1 ending0 waiting | next=waitForPrevious waiting(g2) | declared+1 liveGenerations+1"
                ),
                .startAllowed: .traps,
                .runEndedCurrent: .becomes(
                    "none none g1/1 ending0 finished | dropTask endedRun(g1 finished) | finished+1 runningActions-1 liveGenerations-1"
                ),
                .runEndedCancelled: .traps,
                .remove: .becomes(
                    "none none g1/1 ending1 cancelled(removed) removed | cancelTask endedRun(g1 cancelled(removed)) | cancelled+1 liveGenerations-1"
                ),
                .removeAtShutdown: .becomes(
                    "none none g1/1 ending1 cancelled(registryShutDown) removed | cancelTask endedRun(g1 cancelled(registryShutDown)) | cancelled+1 liveGenerations-1"
                ),
                .progressDue: .becomes("none task g1/1 ending0 running progress | result=true | "),
                .synchronousRunDue: .traps,
                .cancelByCaller: .becomes(
                    "none none g1/1 ending1 cancelled(cancelledByCaller) | cancelTask endedRun(g1 cancelled(cancelledByCaller)) | cancelled+1 liveGenerations-1"
                ),
                .runTimedOut: .becomes(
                    "none none g1/1 ending1 cancelled(timedOut) | cancelTask endedRun(g1 cancelled(timedOut)) | cancelled+1 timedOut+1 liveGenerations-1"
                ),
                .inheritEndingRuns: .traps,
                .previousRunEnded: .traps,
                .startAtLimitFull: .traps, .admitted: .traps,
                .runFailedRetrying: .becomes(
                    "retrying none g1/1 ending0 waiting | dropTask next=waitForRetry(attempt: 2) waiting(g1) | retries+1 runningActions-1"
                ),
                .startAtLimitFree: .traps,
                .runFailedLastAttempt: .becomes(
                    "none none g1/1 ending0 failed | dropTask endedRun(g1 failed) | failed+1 runningActions-1 liveGenerations-1"
                ),
                .runIsShared: .becomes("none sharedTask g1/1 ending0 running |  | "),
            ]
        ),
        (
            .runningShared,
            [
                .declareEqual: .unchanged,
                .declareNew: .becomes(
                    "startQueued none g2/1 ending1 waiting inQueue | leaveShared endedRun(g1 cancelled(identityChanged)) next=queueStart | declared+1 cancelled+1"
                ),
                .declareNewDebounced: .becomes(
                    "debouncing none g2/1 ending1 waiting | leaveShared endedRun(g1 cancelled(identityChanged)) next=waitForDebounce(deadline: 150) waiting(g2) | declared+1 cancelled+1"
                ),
                .declareNewKeepRunning: .becomes(
                    "awaitingPrevious sharedTask g2/1 ending0 waiting | next=waitForPrevious waiting(g2) | declared+1 liveGenerations+1"
                ),
                .startAllowed: .traps,
                .runEndedCurrent: .becomes(
                    "none none g1/1 ending0 finished | dropTask endedRun(g1 finished) | finished+1 runningActions-1 liveGenerations-1"
                ),
                .runEndedCancelled: .traps,
                .remove: .becomes(
                    "none none g1/1 ending1 cancelled(removed) removed | leaveShared endedRun(g1 cancelled(removed)) | cancelled+1 liveGenerations-1"
                ),
                .removeAtShutdown: .becomes(
                    "none none g1/1 ending1 cancelled(registryShutDown) removed | leaveShared endedRun(g1 cancelled(registryShutDown)) | cancelled+1 liveGenerations-1"
                ),
                .progressDue: .becomes("none sharedTask g1/1 ending0 running progress | result=true | "),
                .synchronousRunDue: .traps,
                .cancelByCaller: .becomes(
                    "none none g1/1 ending1 cancelled(cancelledByCaller) | leaveShared endedRun(g1 cancelled(cancelledByCaller)) | cancelled+1 liveGenerations-1"
                ),
                .runTimedOut: .becomes(
                    "none none g1/1 ending1 cancelled(timedOut) | leaveShared endedRun(g1 cancelled(timedOut)) | cancelled+1 timedOut+1 liveGenerations-1"
                ),
                .inheritEndingRuns: .traps,
                .previousRunEnded: .traps,
                .startAtLimitFull: .traps, .admitted: .traps,
                .runFailedRetrying: .becomes(
                    "retrying none g1/1 ending0 waiting | dropTask next=waitForRetry(attempt: 2) waiting(g1) | retries+1 runningActions-1"
                ),
                .startAtLimitFree: .traps,
                .runFailedLastAttempt: .becomes(
                    "none none g1/1 ending0 failed | dropTask endedRun(g1 failed) | failed+1 runningActions-1 liveGenerations-1"
                ),
                .runIsShared: .traps,
            ]
        ),
        (
            .synchronousDelayed,
            [
                .declareEqual: .unchanged,
                .declareNew: .becomes(
                    "startQueued none g2/1 ending0 waiting inQueue | dropTask actionNeverCalled endedRun(g1 cancelled(identityChanged)) next=queueStart | declared+1 cancelled+1 runningActions-1"
                ),
                .declareNewDebounced: .becomes(
                    "debouncing none g2/1 ending0 waiting | dropTask actionNeverCalled endedRun(g1 cancelled(identityChanged)) next=waitForDebounce(deadline: 150) waiting(g2) | declared+1 cancelled+1 runningActions-1"
                ),
                .declareNewKeepRunning: .becomes(
                    "awaitingPrevious synchronousDelayed g2/1 ending0 waiting | next=waitForPrevious waiting(g2) | declared+1 liveGenerations+1"
                ),
                .startAllowed: .traps, .runEndedCurrent: .traps, .runEndedCancelled: .traps,
                .remove: .becomes(
                    "none none g1/1 ending0 cancelled(removed) removed | dropTask actionNeverCalled endedRun(g1 cancelled(removed)) | cancelled+1 runningActions-1 liveGenerations-1"
                ),
                .removeAtShutdown: .becomes(
                    "none none g1/1 ending0 cancelled(registryShutDown) removed | dropTask actionNeverCalled endedRun(g1 cancelled(registryShutDown)) | cancelled+1 runningActions-1 liveGenerations-1"
                ),
                .progressDue: .becomes("none synchronousDelayed g1/1 ending0 running progress | result=true | "),
                .synchronousRunDue: .becomes("none synchronousExecuting g1/1 ending0 running | result=true | "),
                .cancelByCaller: .becomes(
                    "none none g1/1 ending0 cancelled(cancelledByCaller) | dropTask actionNeverCalled endedRun(g1 cancelled(cancelledByCaller)) | cancelled+1 runningActions-1 liveGenerations-1"
                ),
                .runTimedOut: .becomes(
                    "none none g1/1 ending0 cancelled(timedOut) | dropTask actionNeverCalled endedRun(g1 cancelled(timedOut)) | cancelled+1 timedOut+1 runningActions-1 liveGenerations-1"
                ),
                .inheritEndingRuns: .traps,
                .previousRunEnded: .traps,
                .startAtLimitFull: .traps, .admitted: .traps,
                .runFailedRetrying: .traps,
                .startAtLimitFree: .traps,
                .runFailedLastAttempt: .traps,
                .runIsShared: .traps,
            ]
        ),
        (
            .synchronousExecuting,
            [
                .declareEqual: .unchanged,
                .declareNew: .becomes(
                    "startQueued none g2/1 ending1 waiting inQueue | dropTask endedRun(g1 cancelled(identityChanged)) next=queueStart | declared+1 cancelled+1"
                ),
                .declareNewDebounced: .becomes(
                    "debouncing none g2/1 ending1 waiting | dropTask endedRun(g1 cancelled(identityChanged)) next=waitForDebounce(deadline: 150) waiting(g2) | declared+1 cancelled+1"
                ),
                .declareNewKeepRunning: .becomes(
                    "awaitingPrevious synchronousExecuting g2/1 ending0 waiting | next=waitForPrevious waiting(g2) | declared+1 liveGenerations+1"
                ),
                .startAllowed: .traps,
                .runEndedCurrent: .becomes(
                    "none none g1/1 ending0 finished | dropTask endedRun(g1 finished) | finished+1 runningActions-1 liveGenerations-1"
                ),
                .runEndedCancelled: .traps,
                .remove: .becomes(
                    "none none g1/1 ending1 cancelled(removed) removed | dropTask endedRun(g1 cancelled(removed)) | cancelled+1 liveGenerations-1"
                ),
                .removeAtShutdown: .becomes(
                    "none none g1/1 ending1 cancelled(registryShutDown) removed | dropTask endedRun(g1 cancelled(registryShutDown)) | cancelled+1 liveGenerations-1"
                ),
                .progressDue: .becomes("none synchronousExecuting g1/1 ending0 running progress | result=true | "),
                .synchronousRunDue: .traps,
                .cancelByCaller: .becomes(
                    "none none g1/1 ending1 cancelled(cancelledByCaller) | dropTask endedRun(g1 cancelled(cancelledByCaller)) | cancelled+1 liveGenerations-1"
                ),
                .runTimedOut: .traps,
                .inheritEndingRuns: .traps,
                .previousRunEnded: .traps,
                .startAtLimitFull: .traps, .admitted: .traps,
                .runFailedRetrying: .becomes(
                    "retrying none g1/1 ending0 waiting | dropTask next=waitForRetry(attempt: 2) waiting(g1) | retries+1 runningActions-1"
                ),
                .startAtLimitFree: .traps,
                .runFailedLastAttempt: .becomes(
                    "none none g1/1 ending0 failed | dropTask endedRun(g1 failed) | failed+1 runningActions-1 liveGenerations-1"
                ),
                .runIsShared: .traps,
            ]
        ),
        (
            .finished,
            [
                .declareEqual: .unchanged,
                .declareNew: .becomes(
                    "startQueued none g2/1 ending0 waiting inQueue | next=queueStart | declared+1 liveGenerations+1"),
                .declareNewDebounced: .becomes(
                    "debouncing none g2/1 ending0 waiting | next=waitForDebounce(deadline: 150) waiting(g2) | declared+1 liveGenerations+1"
                ),
                .declareNewKeepRunning: .becomes(
                    "startQueued none g2/1 ending0 waiting inQueue | next=queueStart | declared+1 liveGenerations+1"),
                .startAllowed: .traps, .runEndedCurrent: .traps, .runEndedCancelled: .traps,
                .remove: .becomes("none none g1/1 ending0 finished removed |  | "),
                .removeAtShutdown: .becomes("none none g1/1 ending0 finished removed |  | "),
                .inheritEndingRuns: .traps,
                .previousRunEnded: .traps,
                .startAtLimitFull: .traps, .admitted: .traps,
                .runFailedRetrying: .traps,
                .startAtLimitFree: .traps,
                .runFailedLastAttempt: .traps,
                .lastRunIsStale: .becomes("none none g1/1 ending0 finished | result=true | "),
                .runEndKept: .becomes("none none g1/1 ending0 finished | result=true | "),
                .refreshIsDue: .becomes("none none g1/1 ending0 finished | result=true | "),
                .runIsShared: .traps,
            ]
        ),
        (
            .ending,
            [
                .declareEqual: .unchanged,
                .declareNew: .becomes(
                    "startQueued none g2/1 ending1 waiting inQueue | next=queueStart | declared+1 liveGenerations+1"),
                .declareNewDebounced: .becomes(
                    "debouncing none g2/1 ending1 waiting | next=waitForDebounce(deadline: 150) waiting(g2) | declared+1 liveGenerations+1"
                ),
                .declareNewKeepRunning: .becomes(
                    "awaitingPrevious none g2/1 ending1 waiting | next=waitForPrevious waiting(g2) | declared+1 liveGenerations+1"
                ),
                .startAllowed: .traps,
                .runEndedCurrent: .becomes("none none g1/1 ending0 cancelled(identityChanged) |  | runningActions-1"),
                .runEndedCancelled: .becomes("none none g1/1 ending0 cancelled(identityChanged) |  | runningActions-1"),
                .remove: .becomes("none none g1/1 ending1 cancelled(identityChanged) removed |  | "),
                .removeAtShutdown: .becomes("none none g1/1 ending1 cancelled(identityChanged) removed |  | "),
                .inheritEndingRuns: .traps,
                .previousRunEnded: .becomes(
                    "none none g1/1 ending0 cancelled(identityChanged) |  | "
                ),
                .startAtLimitFull: .traps, .admitted: .traps,
                .runFailedRetrying: .becomes("none none g1/1 ending0 cancelled(identityChanged) |  | runningActions-1"),
                .startAtLimitFree: .traps,
                .runFailedLastAttempt: .becomes(
                    "none none g1/1 ending0 cancelled(identityChanged) |  | runningActions-1"),
                .lastRunIsStale: .becomes("none none g1/1 ending1 cancelled(identityChanged) | result=true | "),
                .runEndKept: .becomes("none none g1/1 ending1 cancelled(identityChanged) | result=true | "),
                .refreshIsDue: .becomes("none none g1/1 ending1 cancelled(identityChanged) | result=true | "),
                .runIsShared: .traps,
            ]
        ),
        (
            .removedInQueue,
            [
                .declareEqual: .traps, .declareNew: .traps, .declareNewDebounced: .traps,
                .declareNewKeepRunning: .traps,
                .startAllowed: .becomes("none none g1/0 ending0 cancelled(removed) removed | result=skip | "),
                .runEndedCurrent: .traps, .runEndedCancelled: .traps, .remove: .traps,
                .removeAtShutdown: .traps,
                .cancelByCaller: .traps,
                .dropPending: .traps,
                .runNow: .traps,
                .inheritEndingRuns: .traps,
                .previousRunEnded: .traps,
                .startAtLimitFull: .becomes("none none g1/0 ending0 cancelled(removed) removed | result=skip | "),
                .admitted: .traps,
                .runFailedRetrying: .traps,
                .startAtLimitFree: .becomes("none none g1/0 ending0 cancelled(removed) removed | result=skip | "),
                .runFailedLastAttempt: .traps,
                .runIsShared: .traps,
            ]
        ),
        (
            .removedEnding,
            [
                .declareEqual: .traps, .declareNew: .traps, .declareNewDebounced: .traps,
                .declareNewKeepRunning: .traps,
                .startAllowed: .traps,
                .runEndedCurrent: .becomes("none none g1/1 ending0 cancelled(removed) removed |  | runningActions-1"),
                .runEndedCancelled: .becomes("none none g1/1 ending0 cancelled(removed) removed |  | runningActions-1"),
                .remove: .traps, .removeAtShutdown: .traps,
                .cancelByCaller: .traps,
                .dropPending: .traps,
                .runNow: .traps,
                .inheritEndingRuns: .traps,
                .previousRunEnded: .becomes(
                    "none none g1/1 ending0 cancelled(removed) removed |  | "
                ),
                .startAtLimitFull: .traps, .admitted: .traps,
                .runFailedRetrying: .becomes("none none g1/1 ending0 cancelled(removed) removed |  | runningActions-1"),
                .startAtLimitFree: .traps,
                .runFailedLastAttempt: .becomes(
                    "none none g1/1 ending0 cancelled(removed) removed |  | runningActions-1"),
                .runIsShared: .traps,
            ]
        ),
        (
            .removed,
            [
                .declareEqual: .traps, .declareNew: .traps, .declareNewDebounced: .traps,
                .declareNewKeepRunning: .traps,
                .startAllowed: .traps, .runEndedCurrent: .traps, .runEndedCancelled: .traps, .remove: .traps,
                .removeAtShutdown: .traps,
                .cancelByCaller: .traps,
                .dropPending: .traps,
                .runNow: .traps,
                .inheritEndingRuns: .traps,
                .previousRunEnded: .traps,
                .startAtLimitFull: .traps, .admitted: .traps,
                .runFailedRetrying: .traps,
                .startAtLimitFree: .traps,
                .runFailedLastAttempt: .traps,
                .runIsShared: .traps,
            ]
        ),
    ]
}
