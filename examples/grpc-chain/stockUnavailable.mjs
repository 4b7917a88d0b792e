// Test support (stockUnavailable.timing.test.ts), loaded with
// `node --import` before the example: its stock service answers every lookup
// 503 (its database down), as a real one does, where the example's stock
// never fails.
import express from 'express'

const json = express.response.json
express.response.json = function (body) {
  if (!this.req.path.startsWith('/stock/')) return json.call(this, body)
  return json.call(this.status(503), { error: 'stock database down' })
}
