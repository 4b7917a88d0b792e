import { afterEach, expect, it } from 'vitest'
import { createFetch, type HourglassFetch, type LookupFunction } from '../src/index.js'
import { rejection } from './helpers.js'

// Node refuses some socket options at once: `tls.connect` throws for a `ca`
// that is not a string or a Buffer. For a named host the connector opens the
// socket in the lookup's callback, where that throw was uncaught — the whole
// process crashed, on the first https call — and the request never answered.
// It fails that one call with Node's error now, as it already did for an IP
// address (where undici's own connect catches it). No test here measures time.

let fetch: HourglassFetch | undefined
afterEach(async () => {
  await fetch?.close()
})

it('fails the call with the error tls.connect threw, for a name looked up asynchronously', async () => {
  // Answers on a later turn of the loop, as dns.lookup does.
  const lookup: LookupFunction = (_hostname, _options, callback) => {
    setImmediate(() => callback(null, [{ address: '127.0.0.1', family: 4 }]))
  }
  fetch = createFetch({ lookup, tls: { ca: 42 as never }, connectTimeoutMs: 1000 })
  const error = await rejection(fetch('https://svc.test:4443/'))
  expect(error).toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
})
