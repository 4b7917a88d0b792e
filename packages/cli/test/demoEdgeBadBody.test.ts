import { afterEach, expect, it } from 'vitest'
import type { Chain } from '../src/demo/Chain.js'
import { startNaiveChain } from '../src/demo/naiveChain.js'
import { startToolkitChain } from '../src/demo/toolkitChain.js'

// `hourglass demo --serve` prints curl commands to try. A body that is not
// JSON (a quote lost in the shell) got Express's HTML error page with a
// stack trace and this machine's file paths; it gets a one-line JSON 400.

let chain: Chain | undefined

afterEach(async () => {
  await chain?.close()
  chain = undefined
})

it.each([
  ['toolkit', startToolkitChain],
  ['naive', startNaiveChain],
])(
  '%s edge: a body that is not JSON is a JSON 400 naming the problem, no stack trace',
  async (_name, start) => {
    chain = await start(7)
    const res = await fetch(chain.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '2000' },
      body: '{"question": why?}',
    })
    const text = await res.text()
    expect(res.status).toBe(400)
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    expect(text).not.toMatch(/<html|node_modules|at JSON\.parse/i)
    expect(JSON.parse(text)).toMatchObject({
      error: 'bad_request',
      message: expect.stringMatching(/JSON/),
    })
  },
)

it('a body that is valid JSON but no object (`"why?"`, `null`) is told so, not called invalid JSON', async () => {
  // express.json() refuses any top-level value but an object or array, and
  // said `Unexpected token 'n', "null" is not valid JSON`: a typo to hunt
  // for in a body that has none.
  chain = await startToolkitChain(7)
  for (const [body, kind] of [
    ['"why?"', 'a string'],
    [' null', 'null'],
    ['5', 'a number'],
  ] as const) {
    const res = await fetch(chain.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '2000' },
      body,
    })
    expect(res.status).toBe(400)
    expect(await res.json()).toEqual({
      error: 'bad_request',
      message: `the body must be a JSON object, as {"question":"why?"}; got ${kind}`,
    })
  }
})
