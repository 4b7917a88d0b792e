import { lookup } from 'node:dns/promises'
import {
  DEADLINE_EXPIRED_HEADER,
  DeadlineExceededError,
  isClientClosed,
  isDeadlineExceeded,
  saysDeadlineExpired,
} from '@hourglass/core'
import { deadline, deadlineErrors } from '@hourglass/express'
import { createFetch, type HourglassFetch } from '@hourglass/fetch'
import { callModel, openAICompatible } from '@hourglass/llm'
import { startFakeProvider } from '@hourglass/testkit'
import express, { type Request } from 'express'
import { listen } from '../listen.js'
import { CASE_ID_HEADER, type Chain } from './Chain.js'
import { clientErrors } from './clientErrors.js'
import { promptText } from './promptText.js'
import { LARGE_MODEL, providerScript, SMALL_MODEL } from './providerScript.js'
import { preprocessMs, work, writeMs } from './simulatedWork.js'
import { upstreamErrors } from './upstreamErrors.js'
import { WorkLog } from './WorkLog.js'

const caseOf = (req: Request): string => String(req.headers[CASE_ID_HEADER] ?? 'anonymous')

/** A 504 from an Hourglass service whose deadline (or slice) ran out. */
const ranOut = (answer: Response): boolean =>
  answer.status === 504 && saysDeadlineExpired(answer.headers.get(DEADLINE_EXPIRED_HEADER))

/**
 * The chain wired with Hourglass: each service takes the caller's budget
 * from `x-deadline-remaining-ms`, answers 504 on time, and passes what is
 * left downstream; the client leaving cancels everything behind it.
 */
export async function startToolkitChain(seed: number): Promise<Chain> {
  const log = new WorkLog()
  const slices: Chain['slices'] = new Map()
  const provider = await startFakeProvider({ reply: providerScript(seed) })
  const fetches: HourglassFetch[] = []
  const newFetch = (options: Parameters<typeof createFetch>[0]) => {
    const f = createFetch(options)
    fetches.push(f)
    return f
  }

  // Model service: @hourglass/llm's policy inside the caller's deadline. A
  // 429 is retried only if its Retry-After fits in what is left; an overload
  // (529) falls back to the small model at once; every wait and attempt stops
  // when the deadline does.
  const toProvider = newFetch({ retry: false })
  const modelApp = express()
  modelApp.use(deadline({ defaultMs: 2000, maxMs: 10_000 }))
  modelApp.use(express.json())
  modelApp.post('/generate', (req, res, next) => {
    const caseId = caseOf(req)
    const adapter = (model: string) =>
      openAICompatible({
        baseURL: provider.baseURL,
        apiKey: 'sk-demo',
        model,
        name: 'fake',
        headers: { [CASE_ID_HEADER]: caseId },
        fetch: toProvider,
      })
    log
      .track('model', caseId, async () => {
        try {
          const answer = await callModel({
            models: [adapter(LARGE_MODEL), adapter(SMALL_MODEL)],
            request: {
              messages: [{ role: 'user', content: promptText(req.body.prompt) }],
              maxTokens: 256,
            },
            idempotencyKey: caseId,
            deadline: req.deadline,
            retry: { maxAttempts: 2, max529Retries: 0, budgets: false },
            // Every demo request carries its own scripted provider behaviour
            // (a 429 for this one, a slow first token for that one): the
            // process-wide shared cooldown would let one request's script
            // refuse the next ones, and the side-by-side would compare scripts.
            limits: { admission: false },
          })
          res.json({ text: answer.text, model: answer.model })
        } catch (error) {
          if (isDeadlineExceeded(error) || isClientClosed(error)) throw error
          res.status(503).json({ error: 'model_unavailable' })
        }
      })
      .catch(next)
  })
  modelApp.use(deadlineErrors())
  const model = await listen(modelApp)

  // API service: the request's budget split into slices (dns, preprocess,
  // model, write); a slice that runs out answers 504 naming itself.
  const toModel = newFetch({})
  const apiApp = express()
  apiApp.use(
    deadline({
      defaultMs: 2000,
      maxMs: 10_000,
      plan: { dns: 0.05, preprocess: 0.15, model: 0.7, write: 0.1 },
    }),
  )
  apiApp.use(express.json())
  apiApp.post('/answer', (req, res, next) => {
    const caseId = caseOf(req)
    const plan = req.plan!
    res.once('close', () => slices.set(caseId, plan.report()))
    log
      .track('api', caseId, async () => {
        const { address } = await plan.run('dns', () => lookup('localhost', { family: 4 }))
        const prompt = await plan.run('preprocess', async (signal) => {
          await work(preprocessMs(seed, caseId), signal)
          return promptText(req.body.question).trim()
        })
        const upstream = await plan.run('model', async (signal, slice) => {
          const answer = await toModel(`http://${address}:${model.port}/generate`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', [CASE_ID_HEADER]: caseId },
            body: JSON.stringify({ prompt }),
            deadline: slice,
            signal,
          })
          if (ranOut(answer)) {
            // The model service was given what was left of this slice and
            // answers 504 when it runs out — a moment before this slice's own
            // timer fires. Either way it is this slice that ran out: say so
            // (the 504 below names it), rather than pass on the model
            // service's 504, which knows neither the slice nor the budget.
            await answer.body?.cancel()
            throw new DeadlineExceededError({
              budgetMs: slice.budgetMs,
              elapsedMs: slice.elapsed(),
            })
          }
          return { status: answer.status, body: await answer.json() }
        })
        await plan.run('write', async (signal) => {
          await work(writeMs(seed, caseId), signal)
          res.status(upstream.status).json(upstream.body)
        })
      })
      .catch(next)
  })
  apiApp.use(deadlineErrors())
  const api = await listen(apiApp)

  // Edge: trusts the client's stated budget (up to 10 s) and forwards it in
  // one slice, `api`: should its own time run out before the api service's
  // 504 arrives (a loaded machine), its 504 still names what ran out.
  const toApi = newFetch({})
  const edgeApp = express()
  edgeApp.use(deadline({ defaultMs: 2000, maxMs: 10_000, plan: { api: 1 } }))
  edgeApp.use(express.json())
  edgeApp.post('/ask', (req, res, next) => {
    const caseId = caseOf(req)
    log
      .track('edge', caseId, async () => {
        const { answer, body } = await req.plan!.run('api', async (signal, slice) => {
          const answer = await toApi(`${api.url}/answer`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', [CASE_ID_HEADER]: caseId },
            body: JSON.stringify(req.body ?? {}),
            deadline: slice,
            signal,
          })
          const body = (await answer.json()) as { slice?: unknown } | null
          if (ranOut(answer)) {
            // The api service ran out of one of its slices of this request's
            // time. The edge answers for the request: its 504 carries the
            // budget the caller sent and the time since the edge received it,
            // and names the api service's slice that ran out (or, if that
            // one named none, this `api` slice).
            throw new DeadlineExceededError({
              budgetMs: slice.budgetMs,
              elapsedMs: slice.elapsed(),
              ...(typeof body?.slice === 'string' ? { slice: body.slice } : {}),
            })
          }
          return { answer, body }
        })
        res.status(answer.status).json(body)
      })
      .catch(next)
  })
  edgeApp.use(deadlineErrors())
  edgeApp.use(clientErrors)
  edgeApp.use(upstreamErrors)
  const edge = await listen(edgeApp)

  return {
    name: 'toolkit',
    url: `${edge.url}/ask`,
    provider,
    log,
    slices,
    async close(drainMs = 0) {
      // The edge first: its requests in flight need the hops behind it.
      await edge.close(drainMs)
      await Promise.all([api.close(), model.close()])
      await Promise.all(fetches.map((f) => f.close()))
      await provider.close()
    },
  }
}
