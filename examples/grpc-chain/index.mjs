// One deadline across two protocols, on loopback:
//   client ─HTTP─▶ edge (Express) ─gRPC─▶ inventory (grpc-js) ─HTTP─▶ stock (Express)
// Each hop receives what is left of the caller's budget (x-deadline-remaining-ms,
// grpc-timeout) and keeps back time to answer: the adaptive reserveMs, 10 ms on an
// idle machine, up to 100 ms on a busy one. Run: npm run build && node examples/grpc-chain/index.mjs

import * as grpc from '@grpc/grpc-js'
import { DEADLINE_EXPIRED_HEADER, DEADLINE_HEADER } from '@hourglass/core'
import { deadline, deadlineErrors } from '@hourglass/express'
import { createFetch } from '@hourglass/fetch'
import {
  deadlineInterceptor,
  deadlineOf,
  deadlineServerInterceptor,
  fromGrpcError,
  deadlineErrors as grpcDeadlineErrors,
} from '@hourglass/grpc'
import express from 'express'

// A reader that leaves early (`| head`, `less` quit) ends the output, not the
// run: unhandled, its EPIPE was a stack trace and exit 1 in the middle of it.
process.stdout.on('error', (error) => {
  if (error.code !== 'EPIPE') throw error
})

const json = {
  serialize: (value) => Buffer.from(JSON.stringify(value)),
  deserialize: (bytes) => JSON.parse(bytes.toString()),
}
const inventoryService = {
  check: {
    path: '/shop.Inventory/Check',
    requestStream: false,
    responseStream: false,
    requestSerialize: json.serialize,
    requestDeserialize: json.deserialize,
    responseSerialize: json.serialize,
    responseDeserialize: json.deserialize,
  },
}
const servers = []
const serve = (app) =>
  new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${server.address().port}`),
    )
    servers.push(server)
  })
const handle = (fn) => (req, res, next) => fn(req, res).catch(next)
const seen = {}

// Stock (HTTP): "slow" items take as long as they are allowed to — and are stopped.
const stock = express()
stock.use(deadline())
stock.get(
  '/stock/:item',
  handle(async (req, res) => {
    seen.stock = Math.round(req.deadline.budgetMs)
    let ended
    seen.stockEnded = new Promise((resolve) => {
      ended = resolve
    })
    try {
      if (req.params.item === 'slow') {
        // onDone: called at once for a deadline already over, where an abort listener added late would wait forever.
        await new Promise((resolve) => req.deadline.onDone(resolve))
        seen.stopped = `${req.deadline.signal.reason.name} after ${Math.round(req.deadline.elapsed())} ms`
        return
      }
      res.json({ inStock: true })
    } finally {
      ended()
    }
  }),
)
stock.use(deadlineErrors())
const stockUrl = await serve(stock)

// Inventory (gRPC): reads grpc-timeout, calls stock with what is left.
const fetch = createFetch()
const inventory = new grpc.Server({ interceptors: [deadlineServerInterceptor()] })
inventory.addService(
  inventoryService,
  grpcDeadlineErrors({
    async check(call, callback) {
      seen.inventory = Math.round(deadlineOf(call).budgetMs) // = currentDeadline()
      const res = await fetch(`${stockUrl}/stock/${encodeURIComponent(call.request.item)}`) // deadline: this call's
      if (!res.ok) {
        await res.body?.cancel()
        // Only the 504 a deadline answers (x-deadline-expired: 1) is stock
        // running out of the time this call gave it. Any other failure (a 503,
        // a proxy's own 504) is stock's: neither an answer to pass on as OK
        // nor a deadline.
        const expired = res.status === 504 && res.headers.get(DEADLINE_EXPIRED_HEADER) === '1'
        return callback({
          code: expired ? grpc.status.DEADLINE_EXCEEDED : grpc.status.UNAVAILABLE,
          details: expired ? 'stock ran out of time' : `stock answered ${res.status}`,
        })
      }
      callback(null, await res.json())
    },
  }),
)
const port = await new Promise((resolve, reject) =>
  inventory.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
    e ? reject(e) : resolve(p),
  ),
)
const Inventory = grpc.makeGenericClientConstructor(inventoryService, 'Inventory')
const client = new Inventory(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
  interceptors: [deadlineInterceptor()], // every call: min(its own, the current deadline)
})

// Edge (HTTP): the caller's budget in, a gRPC call out.
const edge = express()
edge.use(deadline({ maxMs: 10_000 }))
edge.get(
  '/order/:item',
  handle(async (req, res) => {
    seen.edge = Math.round(req.deadline.budgetMs)
    const answer = await new Promise((resolve, reject) =>
      client.check({ item: req.params.item }, (error, value) => {
        seen.grpcStatus = error ? grpc.status[error.code] : 'OK'
        if (error)
          reject(fromGrpcError(error)) // DEADLINE_EXCEEDED → DeadlineExceededError → 504
        else resolve(value)
      }),
    )
    res.json(answer)
  }),
)
edge.use(deadlineErrors())
const edgeUrl = await serve(edge)

for (const [item, budgetMs] of [
  ['apples', 1000],
  ['slow', 300],
]) {
  // This request's figures, not the last one's: a hop its budget never
  // reached sets none.
  for (const key of Object.keys(seen)) delete seen[key]
  const started = performance.now()
  const res = await globalThis.fetch(`${edgeUrl}/order/${item}`, {
    headers: { [DEADLINE_HEADER]: String(budgetMs) },
  })
  const ms = Math.round(performance.now() - started)
  const body = await res.text()
  // Stock's deadline ends only a reserve before the edge's: on a busy machine
  // its timer can run after the edge answered. Its handler, when reached, is
  // waited for (its deadline ends it), so what it saw is printed, not an
  // unfinished lookup as "not reached".
  await seen.stockEnded
  console.log(`budget ${budgetMs} ms → ${res.status} after ${ms} ms: ${body}`)
  const given = (hop) => (seen[hop] === undefined ? 'not reached' : `${seen[hop]} ms`)
  console.log(
    `  handlers' budgets: edge ${given('edge')} (HTTP) → inventory ${given('inventory')} (gRPC) → stock ${given('stock')} (HTTP)`,
  )
}
console.log(
  `  inventory ${seen.grpcStatus ? `answered ${seen.grpcStatus}` : 'not called'}; the slow stock lookup ${seen.stopped ? `stopped: ${seen.stopped}` : 'not reached'}`,
)

client.close()
inventory.forceShutdown()
await fetch.close()
for (const server of servers) {
  server.closeAllConnections()
  server.close()
}
