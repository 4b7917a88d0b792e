import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline, ManualClock } from '@hourglass/core'
import { Agent, interceptors, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { deadlineInterceptor } from '../src/index.js'

// undici's redirect interceptor follows a redirect with the options it was
// given. Composed beneath deadlineInterceptor, the hop went out with the
// first request's x-deadline-remaining-ms; composed outside it (as the README
// says), each hop passes through the interceptor and is sent with what is
// left at its own dispatch. No test here measures time: a ManualClock moves
// while the first server "works".

let server: Server | undefined
let agent: Agent | undefined
afterEach(async () => {
  await agent?.close()
  agent = undefined
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

it('with the redirect interceptor composed outside it, each hop carries what is left at its own dispatch', async () => {
  const clock = new ManualClock()
  const seen: Array<{ url: string | undefined; remaining: IncomingMessage['headers'][string] }> = []
  server = createServer((req, res) => {
    seen.push({ url: req.url, remaining: req.headers['x-deadline-remaining-ms'] })
    if (req.url === '/start') {
      // The first server takes 300 ms of the caller's budget to redirect it.
      clock.advance(300)
      res.writeHead(303, { location: '/next' }).end()
      return
    }
    res.end('done')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  agent = new Agent()
  const dispatcher = agent.compose(
    deadlineInterceptor(),
    interceptors.redirect({ maxRedirections: 3 }),
  )
  const deadline = Deadline.after(2000, { clock })
  const res = await request(`http://127.0.0.1:${port}/start`, {
    method: 'POST',
    body: 'payload',
    dispatcher,
    deadline,
  } as Parameters<typeof request>[1])
  expect(await res.body.text()).toBe('done')
  expect(seen).toEqual([
    { url: '/start', remaining: '2000' },
    { url: '/next', remaining: '1700' },
  ])
  deadline.dispose()
})

it("with undici's retry interceptor composed beneath it, a deadline that ends during that interceptor's back-off answers the caller then", async () => {
  const clock = new ManualClock()
  let requests = 0
  server = createServer((_req, res) => {
    requests += 1
    res.writeHead(503, { 'retry-after': '1' }).end()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  agent = new Agent()
  let backOffOver = false
  const retryBeneath = interceptors.retry({
    statusCodes: [503],
    maxRetries: 1,
    // undici's back-off, during which the caller's budget runs out.
    retry: (_error, _state, next) => {
      clock.advance(2000)
      setTimeout(() => {
        backOffOver = true
        next(null)
      }, 300)
    },
  })
  const dispatcher = agent.compose(retryBeneath, deadlineInterceptor())
  const deadline = Deadline.after(1000, { clock })
  const error = await request(`http://127.0.0.1:${port}/`, {
    dispatcher,
    deadline,
  } as Parameters<typeof request>[1]).catch((e: unknown) => e)
  // Before: the caller was answered only when undici's back-off ended (a
  // Retry-After of up to 30 s past the deadline), by the retry it refused.
  expect(backOffOver).toBe(false)
  expect(error).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
  expect(requests).toBe(1)
})
