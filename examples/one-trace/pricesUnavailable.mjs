// Test support (pricesUnavailable.timing.test.ts), loaded with
// `node --import` before the example: its prices service answers every
// lookup 503 (its database down), as a real one does, where the example's
// never fails.
import express from 'express'

const json = express.response.json
express.response.json = function (body) {
  if (!this.req.path.startsWith('/price/')) return json.call(this, body)
  return json.call(this.status(503), { error: 'prices database down' })
}
