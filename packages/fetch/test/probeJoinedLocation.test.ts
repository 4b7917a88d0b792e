import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { inspect } from 'node:util'
import { expect, it } from 'vitest'
import { isProbeRedirect, probe } from '../src/index.js'
import { useCleanup } from './support/useCleanup.js'

// Several Location headers (`Headers` joins them with ", "): probe() read
// the joined text, which parses as one URL with the second header in its
// path, and showed that header's credentials. It names the first, as the
// other paths do (unparsedLocation.test.ts).

const PASSWORD = 'hunter2-c0ffee'
const cleanup = useCleanup()

it('probe names the first of two Location headers, not their joined text with the second one’s credentials', async () => {
  const server = cleanup.keep({
    server: createServer((req, res) => {
      req.resume()
      res.setHeader('location', ['http://a.example/x', `http://user:${PASSWORD}@b.example/y`])
      res.writeHead(302).end('moved')
    }),
    close() {
      this.server.closeAllConnections()
      this.server.close()
    },
  }).server
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const error = await probe(`${base}/start`, { warmup: 0, samples: 1 }).catch((e: unknown) => e)
  expect(isProbeRedirect(error)).toBe(true)
  expect((error as Error).message).toContain('http://a.example/x')
  expect(inspect(error, { depth: 5 })).not.toContain(PASSWORD)
  expect((error as Error).message).not.toContain('b.example')
})
