import { expect, it } from 'vitest'
import { budgetAnswers } from '../../test/support/budgetAnswers.js'
import { runExampleWith } from '../../test/support/runExampleWith.js'

// A timing file (run alone): its outcome is decided within a deadline, which
// a loaded machine could run out first.
//
// The provider's 429 asks for 30 s: the first request's call fails (a 502,
// model_unavailable), and the key then cools for those 30 s, so the second
// request's call is refused before it is sent — a RateLimitedError, which
// the model service left to Express: its HTML page, which the API failed to
// parse as JSON, and the caller got a 500 about that SyntaxError
// (`Unexpected token '<'`), the rate limit nowhere in it.
it('three-hop: a provider at its rate limit reaches the caller as a 502 saying why, in JSON, for the request refused before it was sent too', async () => {
  const run = await runExampleWith(import.meta.url, './providerRateLimited.mjs', 'llm')
  expect(run.code, run.stderr).toBe(0)
  const lines = run.stdout.trimEnd().split('\n')
  expect(lines).toHaveLength(3)
  const answers = budgetAnswers(lines.slice(0, 2))
  expect(answers.map((a) => a.status)).toEqual([502, 502])
  expect(answers[0]?.body).toEqual({
    error: 'model_unavailable',
    reason: expect.stringContaining('rate_limited (HTTP 429'),
  })
  // Not sent: the key is cooling for the 30 s the 429 asked for.
  expect(answers[1]?.body).toEqual({
    error: 'model_unavailable',
    reason: expect.stringMatching(/cooling/),
  })
  expect(lines[2]).toBe('provider: 1 calls, 0 paid; the slow one never reached it')
})
