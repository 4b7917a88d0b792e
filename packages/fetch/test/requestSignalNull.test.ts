import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createFetch } from '../src/index.js'

// fetch(request, { signal: null }): the init's signal member, present and
// null, replaces the Request's — fetch follows no signal at all. createFetch
// followed the Request's and aborted a call fetch itself would finish.

let server: Server | undefined
afterEach(() => server?.close())

it("signal: null in the init drops the Request's own signal, as fetch does", async () => {
  let arrived!: () => void
  const arrival = new Promise<void>((resolve) => {
    arrived = resolve
  })
  let answer!: () => void
  const answered = new Promise<void>((resolve) => {
    answer = resolve
  })
  server = createServer((_req, res) => {
    arrived()
    void answered.then(() => res.end('finished'))
  })
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  const fetch = createFetch()
  try {
    const owner = new AbortController()
    const pending = fetch(new Request(url, { signal: owner.signal }), { signal: null })
    await arrival
    owner.abort()
    answer()
    const res = await pending
    expect(await res.text()).toBe('finished')
  } finally {
    await fetch.close()
  }
})
