import { hearAbort } from '@hourglass/core'
import type { ChatResponse, StreamEvent } from '../types.js'

/**
 * A streamed model call. Iterate it for events (once); `result` settles with
 * the whole answer when the stream ends, or rejects with the same error the
 * iterator throws. Retries and fallbacks happen before the first event is
 * delivered: whatever you read came from one attempt of one model.
 */
export interface ModelStream extends AsyncIterable<StreamEvent> {
  /** The whole answer (also when nobody iterates), or the call's error. */
  readonly result: Promise<ChatResponse>
  /**
   * Stop the call: the attempt in flight is aborted, a wait (backoff,
   * overload, admission cooldown) ends at once, and `result` rejects with
   * `reason` as it is.
   */
  cancel(reason?: unknown): void
  /**
   * Read the provider at the consumer's pace from now on: while this stream
   * is iterated and more than `highWaterMark` (characters of event text,
   * plus 64 per event; default 65536) wait unread, the call stops reading
   * the provider's body until the consumer has taken half of them, so the
   * provider's socket — not memory — holds the rest. For a proxy whose own
   * client reads slowly: without it a client that stops reading made the
   * whole answer wait in memory (200k tokens: +85 MB of heap, per client).
   * Not iterated, the stream is still read at the provider's pace. A paced
   * stream that is neither iterated on nor left (`return`, `cancel`) waits,
   * and `result` with it, until the deadline or the caller's signal.
   */
  readAtConsumerPace(highWaterMark?: number): void
}

/** Where a call writes the events of its committed attempt. @internal */
export interface StreamSink {
  push(event: StreamEvent): void
  /**
   * While the consumer reads at its own pace (`readAtConsumerPace`) and is
   * behind by more than the high-water mark: a promise of the moment it has
   * caught up (or left). Otherwise undefined: nothing allocated per event.
   */
  behind(): Promise<void> | undefined
  /** Aborted when the consumer stops reading or cancels, or the caller's signal aborts. */
  readonly signal: AbortSignal
  /**
   * True when `reason` is the stop of a consumer that left its loop after it
   * was handed the `finish` event: it has the whole answer, the call is no
   * failure (what the provider still had to send, OpenAI's `[DONE]`, is not
   * waited for).
   */
  stoppedAfterFinish(reason: unknown): boolean
  /**
   * True when `reason` is the stop of a consumer that left its loop
   * (`return()`: a `break`, or a throw out of the loop) before `finish`; not
   * for `cancel(reason)` or the caller's signal.
   */
  leftLoop(reason: unknown): boolean
}

/**
 * A single-consumer queue between the call (producer) and the caller's `for
 * await`. `signal`, the caller's, stops the stream as `cancel` does, with its
 * reason: `sink.signal` is then the one signal that ends the call's waits
 * (backoff, overload, admission) and its attempt in flight. @internal
 */
export function createModelStream(
  run: (sink: StreamSink) => Promise<ChatResponse>,
  signal?: AbortSignal | undefined,
): ModelStream {
  // Read from `head` on, not shifted: Array#shift copies a large array, so
  // 100,000 queued events (a consumer behind, or reading after `result`)
  // took ~5 s of blocked event loop to hand out.
  let queue: Array<StreamEvent | undefined> = []
  let head = 0
  // `readAtConsumerPace`: the high-water mark (0 = off), and the weight of what is queued.
  let pace = 0
  let queued = 0
  // The producer, parked while the consumer is behind.
  const parked: Array<() => void> = []
  const unpark = () => {
    if (parked.length === 0) return
    for (const wake of parked.splice(0)) wake()
  }
  const controller = new AbortController()
  // Every read waiting for an event: the async iterator protocol lets a
  // consumer ask for the next event before the last one came, and a single
  // slot left the earlier read unsettled for good (even after the call ended).
  const waiting: Array<() => void> = []
  let ended = false
  let failure: { error: unknown } | undefined
  let iterating = false
  // The consumer called `return()`: whatever is still queued is not delivered.
  let returned = false
  // The consumer was handed the `finish` event: leaving the loop then is no cancellation.
  let finishRead = false
  // The abort reason of a `return()` after `finish`, known by identity.
  let afterFinish: unknown
  // The abort reason of a `return()` before `finish`, known by identity.
  let leftEarly: unknown
  const notify = () => {
    // Called for every event: nothing to allocate while no read waits.
    if (waiting.length === 0) return
    for (const wake of waiting.splice(0)) wake()
  }
  const cancel = (reason?: unknown) => {
    if (!controller.signal.aborted) {
      controller.abort(
        reason ?? new DOMException('the stream consumer stopped reading', 'AbortError'),
      )
    }
  }
  // Linked by hand, not with AbortSignal.any (it leaks on Node 20); unlinked
  // when the call ends. Through core's one listener per signal: a listener
  // per stream made 12 streams under one caller's signal warn
  // MaxListenersExceededWarning.
  let offAbort: (() => void) | undefined
  if (signal?.aborted) cancel(signal.reason)
  else if (signal) offAbort = hearAbort(signal, () => cancel(signal.reason))
  const sink: StreamSink = {
    push(event) {
      queue.push(event)
      // Counted paced or not: pacing may be asked for once events wait.
      queued += weightOf(event)
      notify()
    },
    behind() {
      // Only an iterated stream is paced: one nobody reads still settles `result`.
      if (pace === 0 || !iterating || returned || queued <= pace) return undefined
      return new Promise<void>((resolve) => {
        parked.push(resolve)
      })
    },
    signal: controller.signal,
    stoppedAfterFinish: (reason) => afterFinish !== undefined && reason === afterFinish,
    leftLoop: (reason) => leftEarly !== undefined && reason === leftEarly,
  }
  const result = run(sink).then(
    (response) => {
      offAbort?.()
      ended = true
      notify()
      unpark()
      return response
    },
    (error: unknown) => {
      offAbort?.()
      ended = true
      failure = { error }
      notify()
      unpark()
      throw error
    },
  )
  // Callers that only iterate still see the error there; no unhandled rejection.
  result.catch(() => {})
  return {
    result,
    cancel,
    readAtConsumerPace(highWaterMark = DEFAULT_HIGH_WATER_MARK) {
      if (
        typeof highWaterMark !== 'number' ||
        !Number.isFinite(highWaterMark) ||
        highWaterMark < 1
      ) {
        throw new RangeError(
          `readAtConsumerPace: highWaterMark must be a finite number ≥ 1, got ${String(highWaterMark)}`,
        )
      }
      pace = highWaterMark
    },
    [Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
      if (iterating) throw new TypeError('a ModelStream can be iterated only once')
      iterating = true
      return {
        async next(): Promise<IteratorResult<StreamEvent>> {
          for (;;) {
            if (returned) return { done: true, value: undefined }
            const event = queue[head]
            if (event !== undefined) {
              queue[head++] = undefined
              if (head === queue.length) {
                queue.length = 0
                head = 0
              } else if (head >= 1024 && head * 2 >= queue.length) {
                queue = queue.slice(head)
                head = 0
              }
            }
            if (event !== undefined) {
              if (event.type === 'finish') finishRead = true
              queued -= weightOf(event)
              // Half, not the mark itself: the provider is read in runs, not one event at a time.
              if (pace > 0 && queued <= pace / 2) unpark()
              return { done: false, value: event }
            }
            if (failure !== undefined) throw failure.error
            if (ended) return { done: true, value: undefined }
            await new Promise<void>((resolve) => {
              waiting.push(resolve)
            })
          }
        },
        async return(): Promise<IteratorResult<StreamEvent>> {
          returned = true
          queue.length = 0
          head = 0
          queued = 0
          unpark()
          if (!ended && !controller.signal.aborted) {
            // After `finish` the answer is whole: the attempt in flight (still
            // reading up to the provider's end marker) is stopped all the
            // same, and ends as a success (streamAttempt).
            if (finishRead) {
              afterFinish = new DOMException(
                'the stream consumer stopped reading after the finish event',
                'AbortError',
              )
            } else {
              leftEarly = new DOMException('the stream consumer stopped reading', 'AbortError')
            }
            cancel(afterFinish ?? leftEarly)
          }
          // A read still waiting ends too, done, as after an async generator's return.
          notify()
          return { done: true, value: undefined }
        },
      }
    },
  }
}

/** The default of `readAtConsumerPace`: some 1000 tokens' events. */
const DEFAULT_HIGH_WATER_MARK = 64 * 1024

/** What an event weighs against the high-water mark: its text, and a share for the object. */
function weightOf(event: StreamEvent): number {
  switch (event.type) {
    case 'text':
      return 64 + event.text.length
    case 'thinking':
      return 64 + event.thinking.length
    case 'signature':
      return 64 + event.signature.length
    case 'tool_call':
      return 64 + event.name.length + event.argumentsDelta.length
    default:
      return 64
  }
}
