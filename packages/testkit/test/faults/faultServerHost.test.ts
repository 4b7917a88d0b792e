import { describe, expect, it } from 'vitest'
import { faultServer } from '../../src/index.js'

const listening = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPServerWrap').length

// "An HTTP server on 127.0.0.1 (or host)", "Loopback only" (README). A host
// that is no string was read by listen() as a backlog (every interface),
// then `host.includes` threw with the server listening, leaked for good;
// `''` bound every interface and gave the URL `http://:PORT`.
describe('faultServer host option', () => {
  it.each([
    ['a number (read by listen() as a backlog: every interface)', 1234],
    ['an empty string (every interface, url http://:PORT)', ''],
  ])('refuses %s before any port opens, a TypeError naming host', async (_name, host) => {
    const before = listening()
    await expect(faultServer({ type: 'respond' }, { host: host as string })).rejects.toThrow(
      /faultServer: host must be a non-empty string/,
    )
    expect(listening()).toBe(before)
  })

  it('still takes a loopback host', async () => {
    const v4 = await faultServer({ type: 'respond' }, { host: '127.0.0.1' })
    try {
      expect(v4.url).toBe(`http://127.0.0.1:${v4.port}`)
    } finally {
      await v4.close()
    }
  })
})
