import { expect, it } from 'vitest'
import { budgetAnswers } from '../../test/support/budgetAnswers.js'
import { runExampleWith } from '../../test/support/runExampleWith.js'

// What the model service answers that is not a model's answer, each in JSON
// with its own status: a client's malformed JSON, a body over express.json's
// limit, a charset it does not read (body-parser's 400, 413, 415: the
// example's last handler turned them into a 500 "internal", logged as our
// bug; at the edge, Express's HTML page), a body without a prompt (a
// TypeError logged as ours), and an answer cut at max_tokens before a word
// of it — blank lines at most (a 502: a 200 with no text read as a
// success). No millisecond is asserted: the
// example's two requests are only counted. They carry 5 s, not the
// example's 1 s (clientMistakes.mjs): the 502 comes once callModel's
// recovery (4 provider calls) ends, which a loaded box once let run past
// the API's 700 ms model slice — a 504, not the answer tested here.
it('three-hop: a client mistake keeps its 4xx in JSON, and an answer cut before a word is a 502, not an empty 200', async () => {
  const run = await runExampleWith(import.meta.url, './clientMistakes.mjs', 'llm')
  expect(run.code, run.stderr).toBe(0)
  const lines = run.stdout.trimEnd().split('\n')
  expect(lines.slice(0, 10)).toEqual([
    'PROBE model malformed JSON: 400 {"error":"entity.parse.failed"}',
    'PROBE model 200 kB body: 413 {"error":"entity.too.large"}',
    'PROBE model koi8-r charset: 415 {"error":"charset.unsupported"}',
    'PROBE model no prompt: 400 {"error":"bad_request","reason":"prompt: expected a string"}',
    // The edge, which clients call: Express's HTML page (with its stack) before.
    'PROBE edge malformed JSON: 400 {"error":"entity.parse.failed"}',
    'PROBE edge 200 kB body: 413 {"error":"entity.too.large"}',
    'PROBE edge koi8-r charset: 415 {"error":"charset.unsupported"}',
    // Sent on as the question "undefined", paid for; or an HTML 500.
    'PROBE edge no question: 400 {"error":"bad_request","reason":"question: expected a non-blank string"}',
    'PROBE edge blank question: 400 {"error":"bad_request","reason":"question: expected a non-blank string"}',
    'PROBE edge text body: 400 {"error":"bad_request","reason":"question: expected a non-blank string"}',
  ])
  for (const service of ['model service:', 'api:', 'edge:'])
    expect(run.stderr).not.toContain(service)
  const answers = budgetAnswers(lines.slice(10, 12))
  expect(answers).toHaveLength(2)
  for (const answer of answers) {
    expect(answer.status).toBe(502)
    // A short stable reason, not the error's message with the recovery's internals.
    expect(answer.body).toEqual({ error: 'output_truncated', reason: 'length' })
  }
})
