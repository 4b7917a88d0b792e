import { afterEach, expect, it, vi } from 'vitest'
import type { Chain } from '../src/demo/Chain.js'
import { startNaiveChain } from '../src/demo/naiveChain.js'
import { startToolkitChain } from '../src/demo/toolkitChain.js'

// `hourglass demo --serve` prints curl commands to try, and a question is
// whatever JSON the caller typed. The api service read it with String(),
// which throws on an object with no usable toString: Express printed the
// stack on the demo's terminal, and the toolkit edge answered with an HTML
// page holding a stack trace and this machine's file paths (the naive one a
// 502). Any JSON question is now read as text, and answered.

let chain: Chain | undefined

afterEach(async () => {
  vi.restoreAllMocks()
  await chain?.close()
  chain = undefined
})

it.each([
  ['toolkit', startToolkitChain],
  ['naive', startNaiveChain],
])(
  '%s chain: a question that is an object without toString is answered, no stack anywhere',
  async (_name, start) => {
    const printed = vi.spyOn(console, 'error').mockImplementation(() => {})
    chain = await start(7)
    const res = await fetch(chain.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '10000' },
      body: '{"question":{"toString":1}}',
    })
    const text = await res.text()
    expect(text).not.toMatch(/<html|node_modules|at String/i)
    expect(res.status).toBe(200)
    expect(JSON.parse(text)).toMatchObject({ text: expect.any(String) })
    expect(printed).not.toHaveBeenCalled()
  },
)
