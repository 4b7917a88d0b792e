// One middle hop in three shapes, each on its own 127.0.0.1 port, all calling
// the same slow upstream (argv[2]) and forwarding `x-bench-id` so the bench
// can match upstream work to the caller's request:
// - hourglass: deadline() + createFetch (budget from x-deadline-remaining-ms)
// - connect-timeout: connect-timeout set per request from the same header,
//   outbound call with plain undici.request (connect-timeout offers no signal)
// - per-hop: the budget header ignored; a fixed 1 s timeout on the outbound call
// - floor: no outbound call at all, a 504 from a plain setTimeout(budget − 10),
//   the moment ours answers (reserveMs 10): how late any answer is here under this load

import { deadline, deadlineErrors } from '@hourglass/express'
import { createFetch } from '@hourglass/fetch'
import timeout from 'connect-timeout'
import express from 'express'
import { Agent, request } from 'undici'
import { announceReady } from '../lib/child.js'

const upstream = `${process.argv[2]}/work`
const PER_HOP_TIMEOUT_MS = 1000
const idOf = (req) => ({ 'x-bench-id': String(req.headers['x-bench-id']) })

// The hop's own view, to split the caller's lateness into parts: how long a
// request took to reach the hop (the caller stamps `x-bench-sent-at` on the
// host's monotonic clock, one for every process: not performance.timeOrigin
// + now(), whose origin is a wall-clock reading per process, shifted by any
// clock step between the two starts), and when the hop finished writing its
// answer relative to arrival + budget.
const now = () => Number(process.hrtime.bigint()) / 1e6
const seen = new Map()
function observe(req, res, next) {
  const arrivedAt = now()
  const entry = {
    arrivalDelayMs: arrivedAt - Number(req.headers['x-bench-sent-at']),
    writtenAfterMs: undefined,
  }
  seen.set(String(req.headers['x-bench-id']), entry)
  const budgetMs = Number(req.headers['x-deadline-remaining-ms'])
  res.once('finish', () => {
    entry.writtenAfterMs = now() - arrivedAt - budgetMs
  })
  next()
}
process.on('message', (message) => {
  if (message?.type !== 'hop-stats') return
  const reply = message.ids.map((id) => seen.get(id)).filter(Boolean)
  for (const id of message.ids) seen.delete(id)
  process.send({ id: message.id, reply })
})

function hourglassApp() {
  const app = express()
  app.use(observe)
  const fetch = createFetch({ retry: false })
  app.use(deadline({ maxMs: 10_000 }))
  app.get('/', async (req, res, next) => {
    try {
      const up = await fetch(upstream, { headers: idOf(req) })
      res.send(await up.text())
    } catch (error) {
      next(error)
    }
  })
  app.use(deadlineErrors())
  return app
}

function connectTimeoutApp() {
  const app = express()
  app.use(observe)
  const dispatcher = new Agent({ connections: 512 })
  app.use((req, res, next) => {
    const ms = Number(req.headers['x-deadline-remaining-ms'] ?? 2000)
    timeout(ms)(req, res, next)
  })
  app.get('/', async (req, res, next) => {
    try {
      const up = await request(upstream, { headers: idOf(req), dispatcher })
      const text = await up.body.text()
      if (!req.timedout) res.send(text)
    } catch (error) {
      if (!req.timedout) next(error)
    }
  })
  app.use((error, _req, res, next) => {
    if (error?.timeout && !res.headersSent) res.status(504).json({ error: 'timeout' })
    else next(error)
  })
  return app
}

function perHopApp() {
  const app = express()
  app.use(observe)
  const dispatcher = new Agent({
    connections: 512,
    headersTimeout: PER_HOP_TIMEOUT_MS,
    bodyTimeout: PER_HOP_TIMEOUT_MS,
  })
  app.get('/', async (req, res) => {
    try {
      const up = await request(upstream, { headers: idOf(req), dispatcher })
      res.send(await up.body.text())
    } catch {
      if (!res.headersSent) res.status(504).json({ error: 'upstream timeout' })
    }
  })
  return app
}

function floorApp() {
  const app = express()
  app.use(observe)
  app.get('/', (req, res) => {
    const ms = Number(req.headers['x-deadline-remaining-ms'] ?? 2000)
    setTimeout(() => res.status(504).json({ error: 'timeout' }), ms - 10)
  })
  return app
}

const apps = {
  hourglass: hourglassApp(),
  'connect-timeout': connectTimeoutApp(),
  'per-hop': perHopApp(),
  floor: floorApp(),
}
const ports = {}
await Promise.all(
  Object.entries(apps).map(
    ([name, app]) =>
      new Promise((resolve) => {
        const server = app.listen(0, '127.0.0.1', () => {
          ports[name] = server.address().port
          resolve()
        })
        server.keepAliveTimeout = 60_000
      }),
  ),
)
announceReady({ ports, perHopTimeoutMs: PER_HOP_TIMEOUT_MS })
