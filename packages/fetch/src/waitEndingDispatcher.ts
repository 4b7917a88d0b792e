import { type Dispatcher, errors as undiciErrors } from 'undici'
import type { RetryWaits } from './OutboundCall.js'

/**
 * createFetch's composed dispatcher (`fetch.dispatcher`, over the Agent it
 * built itself) whose `close()` and `destroy()` also end the calls waiting
 * to retry, as `fetch.close()` does: the README sends a caller with a body
 * never read to `fetch.dispatcher.destroy()` in place of `fetch.close()`,
 * and that left a call between two attempts asleep for the rest of its
 * `Retry-After` (up to a minute, keeping the process up), to fail then with
 * `ClientDestroyedError`. Each ends them with undici's own error, the one a
 * call made after it gets.
 */
export function waitEndingDispatcher<D extends Dispatcher>(dispatcher: D, waiting: RetryWaits): D {
  return new Proxy(dispatcher, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key)
      if ((key !== 'close' && key !== 'destroy') || typeof value !== 'function') return value
      return function (this: unknown, ...args: unknown[]): unknown {
        waiting.end(
          key === 'close'
            ? new undiciErrors.ClientClosedError(
                'fetch.dispatcher.close() was called while this call waited to retry: it was not sent again',
              )
            : new undiciErrors.ClientDestroyedError(
                'fetch.dispatcher.destroy() was called while this call waited to retry: it was not sent again',
              ),
        )
        return value.apply(this, args)
      }
    },
  })
}
