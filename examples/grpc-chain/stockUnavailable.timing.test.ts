import { expect, it } from 'vitest'
import { runExampleWith } from '../../test/support/runExampleWith.js'

// A timing file (run alone): its outcome is decided within a deadline, which
// a loaded machine could run out first.
//
// The inventory handler checked stock's answer for a 504 only, and read any
// other failure as the answer: a 503 went back over gRPC as OK, and the edge
// answered 200 {"error":"stock database down"} — a failure served as success.
it('grpc-chain: a stock lookup answered 503 is a failed gRPC call, not an OK carrying the error body', async () => {
  const run = await runExampleWith(import.meta.url, './stockUnavailable.mjs', 'grpc')
  expect(run.code, run.stderr).toBe(0)
  // The edge's answer: an error status (Express's 500 page for a failed call, naming it), not 200.
  expect(run.stdout).toMatch(/^budget 1000 ms → 500 after \d+ ms: /)
  expect(run.stdout).toContain('14 UNAVAILABLE: stock answered 503')
})
