import type { AddressInfo } from 'node:net'
import { inspect } from 'node:util'
import { Deadline } from '@hourglass/core'
import { expect, it } from 'vitest'
import {
  createFetch,
  ProbeRedirectError,
  RedirectWithStreamBodyError,
  type UnexpectedRedirectError,
} from '../src/index.js'
import { useHttpServer } from './helpers.js'

// The redirect errors keep the Location's query (a signature, a token) and
// its credentials out of their message, as a message is logged — but their
// `location` field was an own enumerable property, and a logger serialises
// those: pino's `err` serializer copies every enumerable property (`for…in`),
// JSON.stringify and util.inspect show them. `{ err }` in a log line printed
// the whole Location the message had been careful to cut.

const SECRET = 'MARK-sig-5b1f0c'
const PASSWORD = 'MARK-pw-9d27e4'

/** What a logger sees of an error: pino's walk (`for…in`), JSON and inspect. */
function logged(error: Error): string[] {
  const copied: Record<string, unknown> = {}
  for (const key in error) copied[key] = (error as unknown as Record<string, unknown>)[key]
  return [JSON.stringify(copied), JSON.stringify(error), inspect(error, { depth: 5 })]
}

const listen = useHttpServer()

it("an UnexpectedRedirectError's Location query and credentials reach no log line, and `location` still has them", async () => {
  const base = await listen((req, res) => {
    const { port } = req.socket.address() as AddressInfo
    res
      .writeHead(302, { location: `http://u:${PASSWORD}@127.0.0.1:${port}/next?sig=${SECRET}` })
      .end()
  })
  const { port } = new URL(base)
  const fetch = createFetch()
  let error: UnexpectedRedirectError | undefined
  try {
    await fetch(`${base}/start`, {
      redirect: 'error',
      deadline: Deadline.after(2000),
    })
  } catch (thrown) {
    error = thrown as UnexpectedRedirectError
  } finally {
    await fetch.close()
  }
  expect(error?.code).toBe('UNEXPECTED_REDIRECT')
  // Still there for the code that reads it.
  expect(error?.location).toBe(`http://u:${PASSWORD}@127.0.0.1:${port}/next?sig=${SECRET}`)
  for (const text of logged(error as Error)) {
    expect(text).not.toContain(SECRET)
    expect(text).not.toContain(PASSWORD)
  }
  // The rest of what a log line shows is kept.
  expect(JSON.stringify(error)).toContain('"status":302')
  expect(JSON.stringify(error)).toContain('"code":"UNEXPECTED_REDIRECT"')
})

it.each([
  [
    'RedirectWithStreamBodyError',
    () =>
      new RedirectWithStreamBodyError(
        'http://a/x',
        307,
        `http://u:${PASSWORD}@b/y?sig=${SECRET}`,
        new Error(''),
      ),
  ],
  [
    'ProbeRedirectError',
    () => new ProbeRedirectError('http://a/x', 302, `http://u:${PASSWORD}@b/y?sig=${SECRET}`),
  ],
])('a %s keeps its `location` out of what a logger serialises', (_name, make) => {
  const error = make()
  expect(error.location).toBe(`http://u:${PASSWORD}@b/y?sig=${SECRET}`)
  for (const text of logged(error)) {
    expect(text).not.toContain(SECRET)
    expect(text).not.toContain(PASSWORD)
  }
  expect(JSON.stringify(error)).toContain(`"status":${error.status}`)
})
