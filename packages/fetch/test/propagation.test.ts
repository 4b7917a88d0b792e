import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline, readDeadline, runWithDeadline } from '@hourglass/core'
import express from 'express'
import { afterEach, expect, it } from 'vitest'
import { createFetch } from '../src/index.js'

let servers: Server[] = []
afterEach(async () => {
  for (const s of servers) s.closeAllConnections()
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))))
  servers = []
})

async function listen(app: express.Express): Promise<string> {
  const server = app.listen(0, '127.0.0.1')
  servers.push(server)
  await new Promise((resolve) => server.once('listening', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

it('propagates across two hops: hop 2 sees less budget than hop 1 was given', async () => {
  // Hop 2: a plain Express app that reads the budget it was handed.
  const seenByHop2: number[] = []
  const hop2 = express()
  hop2.get('/work', (req, res) => {
    seenByHop2.push(readDeadline(req.headers).ms ?? -1)
    res.json({ ok: true })
  })
  const hop2Url = await listen(hop2)

  // Hop 1: reads its budget, spends some of it, then calls hop 2 with the implicit deadline.
  const fetch = createFetch()
  const hop1 = express()
  hop1.get('/start', async (req, res) => {
    const { ms } = readDeadline(req.headers)
    const deadline = Deadline.after(ms ?? 1000)
    try {
      const body = await runWithDeadline(deadline, async () => {
        await new Promise((r) => setTimeout(r, 50)) // 50 ms of local work before the call
        const upstream = await fetch(`${hop2Url}/work`)
        return upstream.json()
      })
      res.json(body)
    } finally {
      deadline.dispose()
    }
  })
  const hop1Url = await listen(hop1)

  // Real time: two hops (each connecting) and 50 ms of work must fit in it
  // on a loaded machine too, so 10 s rather than 1 s.
  const res = await fetch(`${hop1Url}/start`, { deadline: Deadline.after(10_000) })
  const text = await res.text()
  expect(text).toBe('{"ok":true}')
  await fetch.close()
  expect(seenByHop2).toHaveLength(1)
  const hop2Budget = seenByHop2[0]!
  // Hop 1 was given ≤ 10,000 ms and spent ≥ 50 ms of it before calling.
  expect(hop2Budget).toBeGreaterThan(0)
  expect(hop2Budget).toBeLessThanOrEqual(9950)
})
