import type { HourglassFetch } from '@hourglass/fetch'

/**
 * `fetch` with a shorter wait for a provider's response headers: undici's
 * per-request `headersTimeout`, set on every request its dispatcher sends,
 * which @hourglass/fetch takes as that request's headers limit when it is
 * narrower than its own (600 s in the gateway's default fetch). The adapters
 * send through `dispatcher` only, so that is all this changes; the function
 * and `wouldRefuse` are the given fetch's, and `close()` closes nothing (the
 * gateway closes the fetch it made, once).
 *
 * Past the limit the attempt fails as a `HEADERS_TIMEOUT`, which llm reads
 * as a `timeout` after the request was sent: not resent to this model (it
 * may be generating, and billing), handed to the next model of the fallback
 * list. Without it, a provider that took the connection and never answered
 * held the request until its deadline, and no fallback was tried.
 */
export function withHeadersTimeout(
  fetch: HourglassFetch,
  headersTimeoutMs: number,
): HourglassFetch {
  const dispatcher = fetch.dispatcher.compose(
    (dispatch) => (opts, handler) =>
      dispatch(Object.assign({}, opts, { headersTimeout: headersTimeoutMs }), handler),
  )
  const call = (...args: Parameters<HourglassFetch>) => fetch(...args)
  return Object.assign(call, {
    dispatcher,
    close: async () => {},
    wouldRefuse: (init?: Parameters<HourglassFetch['wouldRefuse']>[0]) => fetch.wouldRefuse(init),
  })
}
