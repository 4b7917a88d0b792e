import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, expect, it } from 'vitest'
import { isProbeRedirect, probe } from '../src/index.js'

// probe times requests. fetch answers a `data:` or `blob:` URL itself, with
// no request: every call "succeeded", no attempt was timed, and the probe
// rejected with "Cannot read properties of undefined (reading 'medianMs')".
// And a redirect's `Location` was printed whole in ProbeRedirectError's
// message, query included, where the package's other redirect errors leave
// it out (a message is logged; a query may carry a signature).

let closers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

it('refuses a data: URL with a message that says why, not a TypeError from inside', async () => {
  const error = await probe('data:,hello', { warmup: 0, samples: 1 }).catch((e: unknown) => e)
  expect(error).toBeInstanceOf(TypeError)
  expect((error as Error).message).toMatch(/^probe: a data: URL is not a request over the network/)
})

it('refuses a blob: URL the same way', async () => {
  const url = URL.createObjectURL(new Blob(['hello']))
  try {
    await expect(probe(url, { warmup: 0, samples: 1 })).rejects.toThrow(
      /^probe: a blob: URL is not a request/,
    )
  } finally {
    URL.revokeObjectURL(url)
  }
})

it("ProbeRedirectError's message leaves the queries out; its location keeps the Location whole", async () => {
  const server = createServer((_req, res) => {
    res.writeHead(302, { location: '/to?signature=secret' }).end()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  closers.push({
    close: async () => {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    },
  })
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const error = await probe(`${base}/from?key=secret`, { warmup: 0, samples: 1 }).catch(
    (e: unknown) => e,
  )
  expect(isProbeRedirect(error)).toBe(true)
  expect(error).toMatchObject({ status: 302, location: `${base}/to?signature=secret` })
  const message = (error as Error).message
  expect(message).toContain(`probe: ${base}/from answered 302, a redirect to ${base}/to:`)
  expect(message).not.toContain('secret')
})
