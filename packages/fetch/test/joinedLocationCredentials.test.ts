import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { inspect } from 'node:util'
import { expect, it } from 'vitest'
import { unparsedWithoutQuery } from '../src/errors/withoutQuery.js'
import { isProbeRedirect, probe } from '../src/index.js'
import { useCleanup } from './support/useCleanup.js'

// Several Location headers (undici and `Headers` join them with ", "): the
// credentials of any of them stay out of what is shown. A password holding
// ", " split them off their scheme in whichever header carried them — the
// first header's were cut, a later one's shown — and probe() read the
// joined text, which parses as one URL with the second header in its path.

const PASSWORD = 'hunter2-c0ffee'
const cleanup = useCleanup()

it.each([
  [
    `http://a.example:undefined/x, http://user:${PASSWORD}, pw@b.example/y`,
    'http://a.example:undefined/x, http://b.example/y',
  ],
  [`/a, //user:${PASSWORD}, pw@b.example:undefined/y`, '/a, //b.example:undefined/y'],
  [`http://user:${PASSWORD}, pw@a.example:undefined/x, /y`, 'http://a.example:undefined/x, /y'],
  [`http://user:${PASSWORD}@a.example:undefined/x`, 'http://a.example:undefined/x'],
])('joined Location %j is shown as %j', (text, shown) => {
  expect(unparsedWithoutQuery(text, true)).toBe(shown)
})

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
