import { Request } from 'undici'
import { expect, it } from 'vitest'
import { createFetch } from '../src/index.js'
import { recordEgress, useHttpServer } from './helpers.js'

const listen = useHttpServer()

/** Answers the first request 503, the rest 200; records each body. */
async function busyOnce(): Promise<{ url: string; bodies: string[] }> {
  const bodies: string[] = []
  const base = await listen((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString())
      res.writeHead(bodies.length === 1 ? 503 : 200).end('answer')
    })
  })
  return { url: `${base}/`, bodies }
}

/**
 * fetch(request, { body }) sends the init's body, and leaves the Request's
 * own unread (fetch reads a Request's body only when the init brings
 * none). The retry rules judged the Request's body all the same: a PUT
 * whose init body was a string was `body-not-replayable`, its 503 returned.
 */
it("a Request with a body of its own, sent with the init's in-memory body, is retried as that body allows", async () => {
  const { url, bodies } = await busyOnce()
  const fetch = createFetch({ retry: { statuses: [503] } })
  const events = recordEgress()
  try {
    const request = new Request(url, { method: 'PUT', body: 'from the request' })
    const answer = await fetch(request, { body: 'from the init' })
    expect(answer.status).toBe(200)
    expect(bodies).toEqual(['from the init', 'from the init'])
    expect(events.retries).toMatchObject([{ reason: 'HTTP_503' }])
    expect(request.bodyUsed).toBe(false)
  } finally {
    events.stop()
    await fetch.close()
  }
})

it('the same Request sent with its own body is still sent once (the control)', async () => {
  const { url, bodies } = await busyOnce()
  const fetch = createFetch({ retry: { statuses: [503] } })
  const events = recordEgress()
  try {
    const answer = await fetch(new Request(url, { method: 'PUT', body: 'from the request' }))
    expect(answer.status).toBe(503)
    expect(bodies).toEqual(['from the request'])
    expect(events.skipped).toMatchObject([{ reason: 'HTTP_503', why: 'body-not-replayable' }])
  } finally {
    events.stop()
    await fetch.close()
  }
})
