import { lookup } from 'node:dns/promises'
import { DEADLINE_EXPIRED_HEADER } from '@hourglass/core'
import { deadline, deadlineErrors } from '@hourglass/express'
import { createFetch, type HourglassFetch } from '@hourglass/fetch'
import { startFakeProvider } from '@hourglass/testkit'
import express, { type Request } from 'express'
import { listen } from '../listen.js'
import { CASE_ID_HEADER, type Chain } from './Chain.js'
import { LARGE_MODEL, providerScript, SMALL_MODEL } from './providerScript.js'
import { preprocessMs, work, writeMs } from './simulatedWork.js'
import { WorkLog } from './WorkLog.js'

/** Statuses after which the model service tries the small model instead (overload is the moment to fall back). */
const FALLBACK_STATUSES = new Set([429, 503, 529])

const caseOf = (req: Request): string => String(req.headers[CASE_ID_HEADER] ?? 'anonymous')

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

  // Model service: one call to the large model (a 429 is retried once, after
  // its Retry-After, only when that fits in the budget); on overload, the
  // small model — all inside the caller's deadline.
  const toProvider = newFetch({ retry: { statuses: [429] } })
  const modelApp = express()
  modelApp.use(deadline({ defaultMs: 2000, maxMs: 10_000 }))
  modelApp.use(express.json())
  modelApp.post('/generate', (req, res, next) => {
    const caseId = caseOf(req)
    const ask = (model: string) =>
      toProvider(`${provider.baseURL}/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': `${caseId}-${model}`,
          [CASE_ID_HEADER]: caseId,
        },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: req.body.prompt }] }),
        deadline: req.deadline,
      })
    log
      .track('model', caseId, async () => {
        let answer = await ask(LARGE_MODEL)
        if (FALLBACK_STATUSES.has(answer.status)) {
          await answer.body?.cancel()
          answer = await ask(SMALL_MODEL)
        }
        if (!answer.ok) {
          await answer.body?.cancel()
          res.status(503).json({ error: 'model_unavailable', providerStatus: answer.status })
          return
        }
        const json = (await answer.json()) as {
          model: string
          choices: { message: { content: string } }[]
        }
        res.json({ text: json.choices[0]?.message.content ?? '', model: json.model })
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
          return String(req.body.question ?? '').trim()
        })
        const upstream = await plan.run('model', async (signal, slice) => {
          const answer = await toModel(`http://${address}:${model.port}/generate`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', [CASE_ID_HEADER]: caseId },
            body: JSON.stringify({ prompt }),
            deadline: slice,
            signal,
          })
          return { status: answer.status, headers: answer.headers, body: await answer.json() }
        })
        await plan.run('write', async (signal) => {
          await work(writeMs(seed, caseId), signal)
          const expired = upstream.headers.get(DEADLINE_EXPIRED_HEADER)
          if (expired) res.set(DEADLINE_EXPIRED_HEADER, expired)
          res.status(upstream.status).json(upstream.body)
        })
      })
      .catch(next)
  })
  apiApp.use(deadlineErrors())
  const api = await listen(apiApp)

  // Edge: trusts the client's stated budget (up to 10 s) and forwards.
  const toApi = newFetch({})
  const edgeApp = express()
  edgeApp.use(deadline({ defaultMs: 2000, maxMs: 10_000 }))
  edgeApp.use(express.json())
  edgeApp.post('/ask', (req, res, next) => {
    const caseId = caseOf(req)
    log
      .track('edge', caseId, async () => {
        const answer = await toApi(`${api.url}/answer`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', [CASE_ID_HEADER]: caseId },
          body: JSON.stringify(req.body ?? {}),
        })
        const expired = answer.headers.get(DEADLINE_EXPIRED_HEADER)
        if (expired) res.set(DEADLINE_EXPIRED_HEADER, expired)
        res.status(answer.status).json(await answer.json())
      })
      .catch(next)
  })
  edgeApp.use(deadlineErrors())
  const edge = await listen(edgeApp)

  return {
    name: 'toolkit',
    url: `${edge.url}/ask`,
    provider,
    log,
    slices,
    async close() {
      await Promise.all([edge.close(), api.close(), model.close()])
      await Promise.all(fetches.map((f) => f.close()))
      await provider.close()
    },
  }
}
