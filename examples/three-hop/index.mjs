// Three hops on loopback — edge → api → model service → a fake LLM provider —
// wired with Hourglass. Run: npm run build && node examples/three-hop/index.mjs
import { DEADLINE_EXPIRED_HEADER, DeadlineExceededError } from '@hourglass/core'
import { deadline, deadlineErrors } from '@hourglass/express'
import { createFetch } from '@hourglass/fetch'
import {
  callModel,
  isModelUnavailable,
  isOutputTruncated,
  isRateLimited,
  isRequestRejected,
  openAICompatible,
} from '@hourglass/llm'
import { reply, startFakeProvider } from '@hourglass/testkit'
import express from 'express'

// A reader that leaves early (`| head`, `less` quit) ends the output, not the
// run: unhandled, its EPIPE was a stack trace and exit 1 in the middle of it.
process.stdout.on('error', (error) => {
  if (error.code !== 'EPIPE') throw error
})

// The provider: answers in ~150 ms, except for prompts mentioning "essay" (1.5 s).
const provider = await startFakeProvider({
  reply: (req) =>
    reply.text('Rayleigh scattering.', {
      latencyMs: JSON.stringify(req.body).includes('essay') ? 1500 : 150,
    }),
})
const fetch = createFetch()
const servers = []
const serve = (app) =>
  new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${server.address().port}`),
    )
    servers.push(server)
  })
const handle = (fn) => (req, res, next) => fn(req, res).catch(next)
// A client's own mistake, as body-parser reports one (malformed JSON, a
// body too large, a charset it does not read): its 4xx, in JSON like every
// other answer here — Express's own page is HTML, which the service before
// this one fails to parse, and a catch-all would make it our 500.
const clientErrors = (error, _req, res, next) => {
  if (res.headersSent || error?.expose !== true || !(error.status >= 400 && error.status < 500)) {
    return next(error)
  }
  res.status(error.status).json({ error: error.type ?? 'bad_request' })
}
// Anything else: our own failure, logged, and a 500 in JSON without its
// stack. An answer already started cannot become another: Express's own
// handler ends its connection.
const internalErrors = (service) => (error, _req, res, next) => {
  if (res.headersSent) return next(error)
  console.error(`${service}:`, error)
  res.status(500).json({ error: 'internal', code: error?.code })
}

// Model service: the model-call policy, bounded by the caller's deadline.
const model = express()
model.use(deadline({ defaultMs: 2000 }))
model.use(express.json())
model.post(
  '/generate',
  handle(async (req, res) => {
    if (typeof req.body?.prompt !== 'string') {
      return res.status(400).json({ error: 'bad_request', reason: 'prompt: expected a string' })
    }
    try {
      const answer = await callModel({
        models: [
          openAICompatible({
            baseURL: provider.baseURL,
            apiKey: 'sk-demo',
            model: 'fake-model',
            fetch,
          }),
        ],
        request: { messages: [{ role: 'user', content: req.body.prompt }], maxTokens: 200 },
      }) // deadline: the request's, from AsyncLocalStorage
      res.json({ text: answer.text })
    } catch (error) {
      if (!isOutputTruncated(error)) throw error
      // Still cut at max_tokens after callModel's recovery (a raised cap, then
      // "continue" turns: 4 calls, each paid). The error carries everything
      // produced and leaves it to us whether a cut answer is usable: it is
      // the answer, as OpenAI gives one cut at its cap (200, finish_reason
      // "length"), marked so the caller can tell. A 502 would throw away what
      // was paid for — unless nothing was produced (a reasoning model that
      // spent its cap thinking): then there is no answer to give. The reason
      // is OpenAI's finish_reason, short and stable: the error's message
      // (recovery steps, characters produced, a cost budget's figures) is
      // this service's internals, not its caller's to parse.
      if (error.response.text.trim() === '') {
        return res.status(502).json({ error: 'output_truncated', reason: 'length' })
      }
      res.json({ text: error.response.text, truncated: true, reason: 'length' })
    }
  }),
)
model.use(deadlineErrors())
model.use(clientErrors)
// The model call's failures, in JSON like the other answers, saying why.
// Left to Express, each would be an HTML error page that the API, reading
// JSON, fails to parse: the caller would get a 500 about a SyntaxError, the
// cause lost.
// - Every attempt failed (the provider's 500s, say, with no time left to
//   retry), or none was sent: every key still cooling from the provider's
//   429 (its Retry-After: 30 s, say) or overload, a RateLimitedError: a 502.
// - The provider refused the prompt itself (its content policy, a prompt too
//   long for the model): a 422, the question's fault. Never retried, nor sent
//   to a fallback, which would refuse it too. (Express's page would have had
//   the provider's 400 as its status: the error's `status` is the provider's.)
// - Anything else (a bug, an error a future callModel adds): a 500, still in
//   JSON, the error logged here — its message and stack are this service's
//   internals, not the caller's to read.
model.use((error, _req, res, next) => {
  if (res.headersSent) return next(error)
  if (isModelUnavailable(error) || isRateLimited(error)) {
    return res.status(502).json({ error: 'model_unavailable', reason: error.reason })
  }
  if (isRequestRejected(error)) {
    const reason = error.cause.normalized.message // the provider's own words
    return res.status(422).json({ error: 'request_rejected', kind: error.kind, reason })
  }
  next(error)
})
model.use(internalErrors('model service'))
const modelUrl = await serve(model)

// API service: the budget split into slices; the one that runs out is named in the 504.
const api = express()
api.use(deadline({ defaultMs: 2000, plan: { preprocess: 0.2, model: 0.7, write: 0.1 } }))
api.use(express.json())
api.post(
  '/answer',
  handle(async (req, res) => {
    // A blank question is no question either: sent on, it was a paid prompt.
    if (typeof req.body?.question !== 'string' || req.body.question.trim() === '') {
      return res
        .status(400)
        .json({ error: 'bad_request', reason: 'question: expected a non-blank string' })
    }
    const prompt = await req.plan.run('preprocess', async () => req.body.question.trim())
    const answer = await req.plan.run('model', async (_signal, slice) => {
      const r = await fetch(`${modelUrl}/generate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt }),
        deadline: slice, // sends x-deadline-remaining-ms: what the slice has left
      })
      if (r.status === 504 && r.headers.get(DEADLINE_EXPIRED_HEADER) === '1') {
        // The model service ran out of the time this slice gave it. Its 504
        // names its own budget: answer ours (deadlineErrors: the budget our
        // caller sent), naming this slice.
        await r.body?.cancel()
        throw new DeadlineExceededError({
          budgetMs: slice.budgetMs,
          elapsedMs: slice.elapsed(),
          slice: 'model',
        })
      }
      return { status: r.status, body: await r.json() }
    })
    await req.plan.run('write', async () => res.status(answer.status).json(answer.body))
  }),
)
api.use(deadlineErrors())
api.use(clientErrors)
api.use(internalErrors('api'))
const apiUrl = await serve(api)

// Edge: trusts the caller's x-deadline-remaining-ms (up to 10 s).
const edge = express()
edge.use(deadline({ defaultMs: 2000, maxMs: 10_000 }))
edge.use(express.json())
edge.post(
  '/ask',
  handle(async (req, res) => {
    const r = await fetch(`${apiUrl}/answer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(req.body),
    })
    const body = await r.json()
    if (r.status === 504 && r.headers.get(DEADLINE_EXPIRED_HEADER) === '1') {
      // The same at the edge: the budget our caller sent, the slice that ran out inside.
      throw new DeadlineExceededError({
        budgetMs: req.deadline.budgetMs,
        elapsedMs: req.deadline.elapsed(),
        slice: body.slice ?? undefined,
      })
    }
    res.status(r.status).json(body)
  }),
)
edge.use(deadlineErrors())
edge.use(clientErrors)
edge.use(internalErrors('edge'))
const edgeUrl = await serve(edge)

for (const [question, budgetMs] of [
  ['Why is the sky blue?', 1000],
  ['Write an essay on why the sky is blue.', 1000],
]) {
  const started = performance.now()
  const res = await globalThis.fetch(`${edgeUrl}/ask`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': String(budgetMs) },
    body: JSON.stringify({ question }),
  })
  const ms = Math.round(performance.now() - started)
  console.log(`budget ${budgetMs} ms → ${res.status} after ${ms} ms: ${await res.text()}`)
}
// The slow call, if the model service made it: a budget too short to reach
// the provider leaves none (waiting for two calls would never end).
const slowCall = () => provider.requests.find((r) => r.rawBody.includes('essay'))
// The provider sees its caller's connection close on a socket of its own, a
// turn or two of the event loop after the 504 reached us (on a busy machine,
// later): read its outcome once it has one, not at once ("pending").
for (
  const until = performance.now() + 2000;
  (slowCall()?.outcome ?? 'pending') === 'pending' && performance.now() < until;
) {
  await new Promise((resolve) => setTimeout(resolve, 5))
}
const slow = slowCall()
console.log(
  `provider: ${provider.requests.length} calls, ${provider.paidGenerations} paid; ${slow ? `the slow one ended as "${slow.outcome}"` : 'the slow one never reached it'}`,
)

await fetch.close()
for (const server of servers) {
  server.closeAllConnections()
  server.close()
}
await provider.close()
