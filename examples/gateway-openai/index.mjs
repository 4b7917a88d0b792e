// The official `openai` client, unchanged, talking to @hourglass/gateway, which
// fronts two fake providers (an OpenAI-style one that is rate-limiting, and an
// Anthropic-style backup). Run: npm run build && node examples/gateway-openai/index.mjs
import { createGateway } from '@hourglass/gateway'
import { openAIErrors, reply, startFakeProvider } from '@hourglass/testkit'
import express from 'express'
import OpenAI from 'openai'

// A reader that leaves early (`| head`, `less` quit) ends the output, not the
// run: unhandled, its EPIPE was a stack trace and exit 1 in the middle of it.
process.stdout.on('error', (error) => {
  if (error.code !== 'EPIPE') throw error
})

const primary = await startFakeProvider({ dialect: 'openai' })
const backup = await startFakeProvider({
  dialect: 'anthropic',
  reply: reply.text('Hello from the backup model — 你好 👋', { tokenDelayMs: 5 }),
})
// The primary is rate-limited (a 429 with Retry-After: 30): the gateway falls
// back to the backup, and the primary's key cools down for those 30 s, so the
// next request goes straight to the backup.
primary.enqueue(openAIErrors.rateLimited({ retryAfterS: 30 }))

const gateway = createGateway(
  {
    providers: {
      primary: { dialect: 'openai', baseURL: primary.baseURL, apiKeys: ['sk-primary-1'] },
      backup: { dialect: 'anthropic', baseURL: backup.baseURL, apiKeys: ['sk-backup-1'] },
    },
    models: {
      chat: {
        fallback: [
          { provider: 'primary', model: 'gpt-fake' },
          { provider: 'backup', model: 'claude-fake' },
        ],
      },
    },
    deadline: { defaultMs: 5000 },
  },
  { logger: () => {} }, // default: JSON lines on stderr, keys scrubbed
)
const app = express()
app.use(gateway)
const server = await new Promise((resolve) => {
  const s = app.listen(0, '127.0.0.1', () => resolve(s))
})
const baseURL = `http://127.0.0.1:${server.address().port}/v1`

// Only the base URL changes.
const client = new OpenAI({ baseURL, apiKey: 'not-checked-by-this-gateway', maxRetries: 0 })

try {
  const completion = await client.chat.completions.create({
    model: 'chat',
    messages: [{ role: 'user', content: 'Say hello.' }],
  })
  console.log(`non-streaming: ${completion.choices[0].message.content} (model ${completion.model})`)

  const stream = await client.chat.completions.create({
    model: 'chat',
    messages: [{ role: 'user', content: 'Say hello, slowly.' }],
    stream: true,
  })
  let text = ''
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? ''
  console.log(`streaming:     ${text}`)
  console.log(
    `primary: ${primary.requests.length} call(s), outcomes ${primary.requests.map((r) => r.outcome).join(', ')}; backup: ${backup.paidGenerations} answer(s)`,
  )
} catch (error) {
  // What the gateway itself answers is an OpenAI-shaped error, which the
  // client throws as an APIError: a 504 when the request's deadline ran out
  // (the backup slower than deadline.defaultMs), a 429 or 503 with
  // Retry-After when every provider refused. Unhandled, it was a stack
  // trace, exit 1, and the servers below never closed.
  if (!(error instanceof OpenAI.APIError)) throw error
  console.log(`the gateway answered ${error.message}`)
  process.exitCode = 1
} finally {
  // Shutdown, in the order a server stopped mid-traffic needs (a SIGTERM
  // handler): stop accepting, let the gateway drain the requests in flight
  // (close() answers them, or cancels them at drainTimeoutMs), and only then
  // drop the connections left. Dropped first, the requests in flight are cut.
  // close() resolves how the drain went: requests cut off make the stop
  // unclean, worth an exit code a supervisor sees (`hourglass gateway` exits 3).
  const closed = new Promise((resolve) => server.close(resolve))
  const { cutOff } = await gateway.close()
  if (cutOff > 0) process.exitCode = 3
  server.closeAllConnections()
  await closed
  await Promise.all([primary.close(), backup.close()])
}
