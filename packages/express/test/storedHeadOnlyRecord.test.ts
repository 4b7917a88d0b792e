import type { ServerResponse } from 'node:http'
import { describe, expect, it } from 'vitest'
import type { DeadlineMiddlewareOptions } from '../src/index.js'
import { headAtDeadline } from './support/headAtDeadline.js'
import { majors } from './support/servers.js'

/**
 * `writeHead(status, headers)` on a response with no header set before it
 * (Express's `X-Powered-By` disabled, no middleware that sets one): Node
 * stores none of those headers, it writes them straight into the head it
 * holds, their only record. The 504 that replaces that head (not sent yet)
 * must keep what it keeps when they were merged into the stored headers
 * (X-Powered-By on): the CORS a browser needs to read the 504 at all,
 * cookies, `Vary`, and a `Connection: close` the server then acts on.
 * Before, all of them went with the head, and the 504 said
 * `Connection: keep-alive` on a connection Node then closed.
 */

/** The first response's head, without the Date line. */
function firstHead(received: string): string[] {
  return received
    .slice(0, received.indexOf('\r\n\r\n'))
    .split('\r\n')
    .filter((line) => !line.startsWith('Date: '))
}

describe.each(majors)('a stored head that is the only record of its headers ($name)', (major) => {
  const answerFirst = async (
    poweredBy: boolean,
    head: (res: ServerResponse) => void,
    respond?: DeadlineMiddlewareOptions['respond'],
  ) => (await headAtDeadline(major, head, { poweredBy, respond })).received

  const sse = (res: ServerResponse) =>
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Access-Control-Allow-Origin': 'https://app.example',
      'Set-Cookie': ['a=1', 'b=2'],
      Vary: 'Origin',
    })

  it('the 504 keeps the CORS, cookies and Vary it keeps with X-Powered-By on, and drops the body headers', async () => {
    const merged = firstHead(await answerFirst(true, sse))
    const only = firstHead(await answerFirst(false, sse))
    for (const head of [merged, only]) {
      expect(head[0]).toBe('HTTP/1.1 504 Gateway Timeout')
      expect(head).toContain('Access-Control-Allow-Origin: https://app.example')
      expect(head).toContain('Set-Cookie: a=1')
      expect(head).toContain('Set-Cookie: b=2')
      expect(head).toContain('Vary: Origin')
      expect(head).toContain('content-type: application/json; charset=utf-8')
      expect(head.join('\n')).not.toMatch(/event-stream|transfer-encoding/i)
    }
    // The same head, but for the X-Powered-By line.
    expect(only).toEqual(merged.filter((line) => line !== 'X-Powered-By: Express'))
  })

  it("a Connection: close it gave is the 504's: said, and done (no keep-alive said on a connection then closed)", async () => {
    const close = (res: ServerResponse) =>
      res.writeHead(200, { 'Content-Type': 'text/event-stream', Connection: 'close' })
    for (const poweredBy of [true, false]) {
      const received = await answerFirst(poweredBy, close)
      const head = firstHead(received)
      expect(head[0]).toBe('HTTP/1.1 504 Gateway Timeout')
      expect(head).toContain('Connection: close')
      expect(head.join('\n')).not.toMatch(/keep-alive/i)
      // The server closed the connection after the 504: /next was never answered.
      expect(received.match(/HTTP\/1\.1 \d+/g)).toEqual(['HTTP/1.1 504'])
    }
  })

  it("respond's answer keeps them too", async () => {
    const head = firstHead(
      await answerFirst(false, sse, (_req, res) => {
        res.status(504).json({ code: 'too_slow' })
      }),
    )
    expect(head[0]).toBe('HTTP/1.1 504 Gateway Timeout')
    expect(head).toContain('Access-Control-Allow-Origin: https://app.example')
    expect(head).toContain('Set-Cookie: b=2')
    expect(head).toContain('Vary: Origin')
    expect(head.join('\n')).not.toMatch(/event-stream/i)
  })

  it('a keep-alive it gave changes nothing: the connection carries the next request', async () => {
    const keepAlive = (res: ServerResponse) =>
      res.writeHead(200, { 'Content-Type': 'text/event-stream', Connection: 'keep-alive' })
    const received = await answerFirst(false, keepAlive)
    expect(received.match(/HTTP\/1\.1 \d+/g)).toEqual(['HTTP/1.1 504', 'HTTP/1.1 200'])
    expect(received.endsWith('next')).toBe(true)
  })

  it("a Keep-Alive it gave is the 504's, as when merged (Node then writes none of its own)", async () => {
    const keepAlive = (res: ServerResponse) =>
      res.writeHead(200, {
        'Content-Type': 'text/event-stream',
        Connection: 'keep-alive',
        'Keep-Alive': 'timeout=60',
      })
    const merged = firstHead(await answerFirst(true, keepAlive))
    const only = firstHead(await answerFirst(false, keepAlive))
    expect(merged).toContain('Keep-Alive: timeout=60')
    expect(only).toContain('Keep-Alive: timeout=60')
    expect(only.filter((line) => /^keep-alive:/i.test(line))).toHaveLength(1)
  })
})
