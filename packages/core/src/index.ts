export { aggregateEndedBy } from './aggregateEndedBy.js'
/** @internal A signal still at Node's default listener cap gets 1500 (what undici's fetch does). */
export { allowFanOut } from './allowFanOut.js'
export { boundingDeadline } from './boundingDeadline.js'
export { ClientClosedError, isClientClosed } from './ClientClosedError.js'
export {
  coreChannels,
  type DeadlineCancelMessage,
  type DeadlineCreateMessage,
  type DeadlineExpireMessage,
  type SliceEndMessage,
  type SliceOutcome,
  type SliceStartMessage,
} from './channels.js'
export { type Clock, isClock, MAX_TIMER_MS, systemClock, type TimerOptions } from './clock.js'
export {
  type ContextKey,
  type ContextSnapshot,
  captureContext,
  contextKey,
  currentDeadline,
  readContext,
  remainingMs,
  runInContext,
  runOutsideContext,
  runWithContext,
  runWithDeadline,
} from './context.js'
export { cutText } from './cutText.js'
export {
  Deadline,
  type DeadlineOptions,
  isExpiryOf,
  isForeignExpiry,
  markExpiryOf,
  markForeignExpiry,
} from './Deadline.js'
export {
  type DeadlineExceededDetails,
  DeadlineExceededError,
  isDeadlineExceeded,
} from './DeadlineExceededError.js'
export {
  type ChannelGroups,
  type ChannelMessage,
  defineChannel,
  defineChannels,
  type HourglassChannel,
  onChannels,
} from './defineChannel.js'
export { describeValue } from './describeValue.js'
export { endedBy } from './endedBy.js'
export { enforcedRemaining } from './enforcedRemaining.js'
export { errorCode, isAbortError } from './errorCode.js'
export { escapeId, escapeUnprintable, FLAG_TAGS, IN_WORDS, quoted } from './escapeUnprintable.js'
export { expiryError } from './expiryError.js'
export { fieldOf, isError, isInstance, isThenable } from './fieldOf.js'
export { firstMember } from './firstMember.js'
export { grpcTimeoutValue } from './grpcTimeoutValue.js'
export { type GuardedWork, type GuardOptions, guard } from './guard.js'
export { HourglassError, hasErrorCode, isHourglassError } from './HourglassError.js'
export {
  DEADLINE_EXPIRED_HEADER,
  DEADLINE_HEADER,
  DEADLINE_SOURCES,
  type DeadlineSource,
  ENVOY_TIMEOUT_HEADER,
  GRPC_TIMEOUT_HEADER,
  KNOWN_DEADLINE_SOURCES,
  STAINLESS_TIMEOUT_HEADER,
} from './headerNames.js'
export { hearAbort } from './hearAbort.js'
export { isHeaderName, isHeaderValue, isVisibleAscii } from './httpField.js'
export { isAbortSignal } from './isAbortSignal.js'
export { isCallersBudget } from './isCallersBudget.js'
export { isDeadline } from './isDeadline.js'
export { knownDeadlineSources } from './knownDeadlineSources.js'
/** @internal Whether a clock's timers fire at the very time asked for (a ManualClock of any installed copy). */
export { firesExactly, ManualClock } from './ManualClock.js'
export { messageOf } from './messageOf.js'
export { optionError } from './optionError.js'
export { outcomeWithin, type WorkOutcome } from './outcomeWithin.js'
export {
  type HeaderSource,
  type InvalidDeadlineHeader,
  type ReadDeadlineOptions,
  type ReadDeadlineResult,
  readDeadline,
} from './readDeadline.js'
export { refuseUnknownOptions } from './refuseUnknownOptions.js'
export { currentRequestId, runWithRequestId } from './requestId.js'
export {
  DEFAULT_INGRESS_MAX_MS,
  INGRESS_MEANT_INSTEAD,
  type IngressOptions,
  type ResolvedIngressOptions,
  resolveIngressOptions,
} from './resolveIngressOptions.js'
export { retryAfterMs } from './retryAfterMs.js'
export { runningSlice } from './runningSlice.js'
export { type PlanEntry, type PlanOptions, SlicePlan, type SliceReport } from './SlicePlan.js'
export {
  SliceAlreadyStartedError,
  SliceEndedByRunError,
  SliceNotStartedError,
} from './SliceStateError.js'
export { saysDeadlineExpired } from './saysDeadlineExpired.js'
export { schemeCredential } from './schemeCredential.js'
export { streamableReason } from './streamableReason.js'
export {
  adaptiveReserveMs,
  defaultReserveMs,
  MAX_RESERVE_MS,
  MIN_RESERVE_MS,
  recordAnswerLateness,
  resetTimerLateness,
  SAMPLE_MAX_AGE_MS,
  timerLatenessMs,
} from './timerLateness.js'
export { trimOws } from './trimOws.js'
export { UnknownSliceError } from './UnknownSliceError.js'
export { untilEnded } from './untilEnded.js'
export { type WaitOptions, type WaitResult, wait } from './wait.js'
export { type HeaderTarget, writeDeadline } from './writeDeadline.js'
