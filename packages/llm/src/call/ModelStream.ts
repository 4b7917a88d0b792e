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
}

/** Where a call writes the events of its committed attempt. @internal */
export interface StreamSink {
  push(event: StreamEvent): void
  /** Aborted when the consumer stops reading or cancels, or the caller's signal aborts. */
  readonly signal: AbortSignal
  /**
   * True when `reason` is the stop of a consumer that left its loop after it
   * was handed the `finish` event: it has the whole answer, the call is no
   * failure (what the provider still had to send, OpenAI's `[DONE]`, is not
   * waited for).
   */
  stoppedAfterFinish(reason: unknown): boolean
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
  const queue: StreamEvent[] = []
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
  // Linked by hand, not with AbortSignal.any (it leaks on Node 20); unlinked when the call ends.
  const onAbort = () => cancel(signal?.reason)
  if (signal?.aborted) cancel(signal.reason)
  else signal?.addEventListener('abort', onAbort, { once: true })
  const sink: StreamSink = {
    push(event) {
      queue.push(event)
      notify()
    },
    signal: controller.signal,
    stoppedAfterFinish: (reason) => afterFinish !== undefined && reason === afterFinish,
  }
  const result = run(sink).then(
    (response) => {
      signal?.removeEventListener('abort', onAbort)
      ended = true
      notify()
      return response
    },
    (error: unknown) => {
      signal?.removeEventListener('abort', onAbort)
      ended = true
      failure = { error }
      notify()
      throw error
    },
  )
  // Callers that only iterate still see the error there; no unhandled rejection.
  result.catch(() => {})
  return {
    result,
    cancel,
    [Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
      if (iterating) throw new TypeError('a ModelStream can be iterated only once')
      iterating = true
      return {
        async next(): Promise<IteratorResult<StreamEvent>> {
          for (;;) {
            if (returned) return { done: true, value: undefined }
            const event = queue.shift()
            if (event !== undefined) {
              if (event.type === 'finish') finishRead = true
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
          if (!ended && !controller.signal.aborted) {
            // After `finish` the answer is whole: the attempt in flight (still
            // reading up to the provider's end marker) is stopped all the
            // same, and ends as a success (streamAttempt).
            if (finishRead) {
              afterFinish = new DOMException(
                'the stream consumer stopped reading after the finish event',
                'AbortError',
              )
            }
            cancel(afterFinish)
          }
          // A read still waiting ends too, done, as after an async generator's return.
          notify()
          return { done: true, value: undefined }
        },
      }
    },
  }
}
