import http from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  Deadline,
  type HeaderSource,
  type HeaderTarget,
  ManualClock,
  readDeadline,
  writeDeadline,
} from '@hourglass/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

// A message passed where its headers belong: `readDeadline(req)` read it as a
// record of headers, found none, and every request got the default budget;
// `writeDeadline(init, d)` put the header on the RequestInit beside its
// `headers`, where fetch never sends it. Neither said a word.
describe('a request or response passed for its headers is refused', () => {
  let server: http.Server
  let url: string
  const seen: Array<{ fromHeaders: number | undefined; fromReq: unknown }> = []

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let fromReq: unknown
      try {
        readDeadline(req as unknown as HeaderSource)
        fromReq = 'read'
      } catch (error) {
        fromReq = error
      }
      seen.push({ fromHeaders: readDeadline(req.headers).ms, fromReq })
      res.end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it('readDeadline(req): a TypeError saying to pass req.headers, never a silent no deadline', async () => {
    const response = await fetch(url, { headers: { 'x-deadline-remaining-ms': '500' } })
    await response.arrayBuffer()
    expect(seen).toHaveLength(1)
    expect(seen[0]?.fromHeaders).toBe(500)
    expect(seen[0]?.fromReq).toBeInstanceOf(TypeError)
    expect(String(seen[0]?.fromReq)).toMatch(/req\.headers/)
    // A fetch Response too; its Headers are read as ever.
    expect(() => readDeadline(response as unknown as HeaderSource)).toThrow(TypeError)
    expect(readDeadline(new Headers({ 'x-deadline-remaining-ms': '7' })).ms).toBe(7)
  })

  it('writeDeadline(init, d): a TypeError, and the header written into init.headers arrives', async () => {
    const d = Deadline.after(1500, { clock: new ManualClock() })
    const init = { method: 'GET', headers: {} as Record<string, string> }
    expect(() => writeDeadline(init as unknown as HeaderTarget, d)).toThrow(/init\.headers/)
    expect(Object.keys(init)).toEqual(['method', 'headers'])
    writeDeadline(init.headers, d)
    const response = await fetch(url, init)
    await response.arrayBuffer()
    expect(seen.at(-1)?.fromHeaders).toBe(1500)
  })

  it('what holds no headers object is read and written as ever', () => {
    // A header named "headers" sent twice is an array, not a message.
    expect(readDeadline({ headers: ['a', 'b'], 'x-deadline-remaining-ms': '9' }).ms).toBe(9)
    // Something with a get or a setHeader is used through it, whatever else it holds.
    const withGet = {
      headers: {},
      get: (n: string) => (n === 'x-deadline-remaining-ms' ? '11' : null),
    }
    expect(readDeadline(withGet).ms).toBe(11)
    const written: Record<string, string> = {}
    const response = {
      headers: {},
      setHeader(n: string, v: string) {
        written[n] = v
      },
    }
    writeDeadline(response, Deadline.after(20, { clock: new ManualClock() }))
    expect(written).toEqual({ 'x-deadline-remaining-ms': '20' })
  })
})
