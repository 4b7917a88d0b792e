import { lookup } from 'node:dns/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import { startFakeProvider } from '@hourglass/testkit'
import express, { type Request } from 'express'
import { Agent, request } from 'undici'
import { listen } from '../listen.js'
import { CASE_ID_HEADER, type Chain } from './Chain.js'
import { clientErrors } from './clientErrors.js'
import { promptText } from './promptText.js'
import { LARGE_MODEL, providerScript } from './providerScript.js'
import { preprocessMs, work, writeMs } from './simulatedWork.js'
import { WorkLog } from './WorkLog.js'

/** What most services ship: a fixed 30 s timeout per hop. */
const HOP_TIMEOUT_MS = 30_000
/** And a generic retry loop: any failure, 3 attempts (2 retries), 300 ms × attempt between them. */
export const NAIVE_ATTEMPTS = 3
const BACKOFF_MS = 300

const caseOf = (req: Request): string => String(req.headers[CASE_ID_HEADER] ?? 'anonymous')

interface Answer {
  status: number
  body: unknown
}

/**
 * The same chain without Hourglass: every hop waits up to 30 s, tries again
 * on any error or 5xx/429 (3 attempts in all), and has no idea how long its caller will wait
 * — nor that it already left.
 */
export async function startNaiveChain(seed: number): Promise<Chain> {
  const log = new WorkLog()
  const provider = await startFakeProvider({ reply: providerScript(seed) })
  const agent = new Agent({ headersTimeout: HOP_TIMEOUT_MS, bodyTimeout: HOP_TIMEOUT_MS })

  const post = async (url: string, caseId: string, body: unknown): Promise<Answer> => {
    let last: Answer = { status: 502, body: { error: 'upstream_failed' } }
    for (let attempt = 1; attempt <= NAIVE_ATTEMPTS; attempt++) {
      if (attempt > 1) await sleep(BACKOFF_MS * (attempt - 1))
      try {
        const res = await request(url, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': 'application/json', [CASE_ID_HEADER]: caseId },
          body: JSON.stringify(body),
        })
        const json = await res.body.json()
        last = { status: res.statusCode, body: json }
        if (res.statusCode < 500 && res.statusCode !== 429) return last
      } catch (error) {
        last = { status: 502, body: { error: 'upstream_failed', cause: String(error) } }
      }
    }
    return last
  }

  const modelApp = express()
  modelApp.use(express.json())
  modelApp.post('/generate', (req, res, next) => {
    const caseId = caseOf(req)
    log
      .track('model', caseId, async () => {
        const answer = await post(`${provider.baseURL}/chat/completions`, caseId, {
          model: LARGE_MODEL,
          messages: [{ role: 'user', content: req.body.prompt }],
        })
        if (answer.status !== 200) {
          res.status(502).json({ error: 'model_unavailable' })
          return
        }
        const json = answer.body as { model: string; choices: { message: { content: string } }[] }
        res.json({ text: json.choices[0]?.message.content ?? '', model: json.model })
      })
      .catch(next)
  })
  const model = await listen(modelApp)

  const apiApp = express()
  apiApp.use(express.json())
  apiApp.post('/answer', (req, res, next) => {
    const caseId = caseOf(req)
    log
      .track('api', caseId, async () => {
        const { address } = await lookup('localhost', { family: 4 })
        await work(preprocessMs(seed, caseId))
        const prompt = promptText(req.body.question).trim()
        const upstream = await post(`http://${address}:${model.port}/generate`, caseId, { prompt })
        await work(writeMs(seed, caseId))
        res.status(upstream.status).json(upstream.body)
      })
      .catch(next)
  })
  const api = await listen(apiApp)

  const edgeApp = express()
  edgeApp.use(express.json())
  edgeApp.post('/ask', (req, res, next) => {
    const caseId = caseOf(req)
    log
      .track('edge', caseId, async () => {
        const upstream = await post(`${api.url}/answer`, caseId, req.body ?? {})
        res.status(upstream.status).json(upstream.body)
      })
      .catch(next)
  })
  edgeApp.use(clientErrors)
  const edge = await listen(edgeApp)

  return {
    name: 'naive',
    url: `${edge.url}/ask`,
    provider,
    log,
    slices: new Map(),
    async close(drainMs = 0) {
      // The edge first: its requests in flight need the hops behind it.
      await edge.close(drainMs)
      await Promise.all([api.close(), model.close()])
      await agent.destroy()
      await provider.close()
    },
  }
}
