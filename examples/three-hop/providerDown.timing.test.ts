import { expect, it } from 'vitest'
import { runExampleWith } from '../../test/support/runExampleWith.js'

// A timing file (run alone): its outcome is decided within a deadline, which
// a loaded machine could run out first.
//
// The provider failing (500s, no time left to retry): the model service
// answered Express's HTML error page, the API failed to parse it as JSON, and
// the caller got a 500 about that SyntaxError (`Unexpected token '<'`), the
// model's failure nowhere in it.
it('three-hop: a failing provider reaches the caller as a 502 saying why, in JSON, not a 500 about parsing an HTML page', async () => {
  const run = await runExampleWith(import.meta.url, './providerDown.mjs', 'llm')
  expect(run.code, run.stderr).toBe(0)
  const lines = run.stdout.trimEnd().split('\n')
  expect(lines).toHaveLength(3)
  for (const line of lines.slice(0, 2)) {
    expect(line).toMatch(
      /^budget 1000 ms → 502 after \d+ ms: \{"error":"model_unavailable","reason":"server_error \(HTTP 500, server_error\)[^"]*"\}$/,
    )
  }
  expect(lines[2]).toBe('provider: 2 calls, 0 paid; the slow one ended as "error"')
})
