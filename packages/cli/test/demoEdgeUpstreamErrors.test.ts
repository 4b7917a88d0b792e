import { afterEach, expect, it } from 'vitest'
import type { Chain } from '../src/demo/Chain.js'
import { startNaiveChain } from '../src/demo/naiveChain.js'
import { startToolkitChain } from '../src/demo/toolkitChain.js'

// The toolkit edge answered any failure calling the api service that was not
// a deadline with Express's HTML error page: a stack trace and this
// machine's file paths, to whoever ran `demo --serve`'s curl commands. One
// way there: a body the edge reads (under Express's 100 kB limit) and
// forwards re-serialised, a little longer (each 1e21 goes out as 1e+21),
// past the api service's limit; its HTML 413 did not parse as JSON. Both
// edges now answer such a failure as the naive one did: a JSON 502.

let chain: Chain | undefined

afterEach(async () => {
  await chain?.close()
  chain = undefined
})

it.each([
  ['toolkit', startToolkitChain],
  ['naive', startNaiveChain],
])(
  '%s edge: an api service answer that is not JSON is a JSON 502, no stack trace',
  async (_name, start) => {
    chain = await start(7)
    const body = `{"question":[${Array.from({ length: 20_000 }, () => '1e21').join(',')}]}`
    expect(body.length).toBeLessThan(100 * 1024)
    const res = await fetch(chain.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '10000' },
      body,
    })
    const text = await res.text()
    expect(text).not.toMatch(/<html|node_modules|at JSON\.parse/i)
    expect(res.status).toBe(502)
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    expect(JSON.parse(text)).toMatchObject({ error: 'upstream_failed' })
  },
)

// The api service's model slice running out: the toolkit edge answers for
// the request with its own 504 — the budget the caller sent, and
// `x-should-retry: false` — not the api's passed through raw.
it("toolkit edge: the api's slice running out is answered as the request's 504, with the budget the caller sent", async () => {
  const { reply } = await import('@hourglass/testkit')
  chain = await startToolkitChain(7)
  chain.provider.setReply(reply.hang())
  const res = await fetch(chain.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '2000' },
    body: '{"question":"why"}',
  })
  const body = (await res.json()) as { budgetMs?: unknown; slice?: unknown }
  expect([res.status, res.headers.get('x-should-retry'), body.budgetMs]).toEqual([
    504,
    'false',
    2000,
  ])
})
