import { readFileSync } from 'node:fs'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline, ManualClock } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import { createFetch, type EgressOptions } from '../src/index.js'

// The root README's quick start hands its createFetch() to the model
// adapters, replacing @hourglass/llm's own (headersTimeoutMs 600 s): a
// non-streamed model answer sends its headers only after the whole
// generation, so a first-byte limit shorter than the model slice cuts a
// normal answer the budget had room for (5 s of a 7 s slice: a 504 after
// the fallback model was paid for too). Checked against the README as
// written, so the quick start cannot drift back.
function quickStartFetchOptions(): EgressOptions {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  const literal = /createFetch\((\{[^)]*\})\)/.exec(readme)?.[1]
  if (literal === undefined) throw new Error('no createFetch({ … }) in the root README')
  return new Function(`return (${literal})`)() as EgressOptions
}

let close: (() => void) | undefined
afterEach(() => close?.())

it("the root README's fetch lets a non-streamed model answer use its whole slice", async () => {
  const held: ServerResponse[] = []
  let received!: () => void
  const arrived = new Promise<void>((resolve) => {
    received = resolve
  })
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      held.push(res)
      received()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  close = () => {
    server.closeAllConnections()
    server.close()
  }
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`

  const fetch = createFetch(quickStartFetchOptions())
  const clock = new ManualClock()
  // The quick start's budget: maxMs 10 000, the model slice 0.7 of it.
  using slice = Deadline.after(7000, { clock })
  const call = fetch(url, { method: 'POST', body: '{}', deadline: slice })
  const outcome = call.then(
    (res) => `status ${res.status}`,
    (error: { code?: string }) => `failed ${error.code}`,
  )
  await arrived
  clock.advance(6000) // the model is still generating; the slice has 1 s left
  held[0]?.end('{"choices":[]}')
  expect(await outcome).toBe('status 200')
  await fetch.close()
})
