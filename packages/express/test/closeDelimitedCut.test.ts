import net from 'node:net'
import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { listen, majors, type Running } from './support/servers.js'

/**
 * A started response framed by the connection's close — an HTTP/1.0 caller
 * (nginx's default `proxy_http_version`), or a proxy route that removed
 * `Transfer-Encoding` and declared no length — cut by the deadline. No
 * trailer can mark it, and a clean close is its end: ended cleanly, every
 * client (curl, nginx, Node's http) read the short body as a whole 200. It
 * is reset.
 */
function exchange(
  port: number,
  head: string,
  onFirstPart: () => void,
): Promise<{ how: string; body: string }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    let got = ''
    let told = false
    socket.on('data', (chunk) => {
      got += chunk
      // The part is here before the deadline cuts the stream.
      if (!told && got.includes('part 1 of 3')) {
        told = true
        onFirstPart()
      }
    })
    socket.on('error', (error: NodeJS.ErrnoException) =>
      resolve({ how: error.code ?? 'error', body: got }),
    )
    socket.on('end', () => resolve({ how: 'end', body: got }))
    socket.write(head)
  })
}

describe.each(majors)('a close-framed stream cut by the deadline ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function serve(clock: ManualClock) {
    const app = major.app()
    app.use(deadline({ clock, reserveMs: 0, defaultMs: 1000 }))
    app.get('/feed', (req, res) => {
      res.type('text')
      if (req.query.proxy) res.removeHeader('transfer-encoding')
      res.write('part 1 of 3\n')
    })
    app.use(deadlineErrors())
    server = await listen(app)
    return Number(new URL(server.url).port)
  }

  it.each([
    ['an HTTP/1.0 caller', 'GET /feed HTTP/1.0\r\nHost: x\r\n\r\n'],
    ['a route that removed Transfer-Encoding', 'GET /feed?proxy=1 HTTP/1.1\r\nHost: x\r\n\r\n'],
  ])('%s: the connection is reset, not closed as a whole answer', async (_name, head) => {
    const clock = new ManualClock()
    const port = await serve(clock)
    const { how, body } = await exchange(port, head, () => clock.advance(1000))
    expect(body).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
    expect(body).not.toMatch(/\r\n(?:content-length|transfer-encoding):/i)
    expect(body.split('\r\n\r\n')[1]).toBe('part 1 of 3\n')
    expect(how).toBe('ECONNRESET')
  })

  it('a chunked stream is still ended cleanly, its trailer marking the cut', async () => {
    const clock = new ManualClock()
    const port = await serve(clock)
    const { how, body } = await exchange(
      port,
      'GET /feed HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      () => clock.advance(1000),
    )
    expect(how).toBe('end')
    expect(body).toContain('x-deadline-expired: 1')
  })
})
