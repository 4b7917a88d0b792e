import type { IncomingMessage } from 'node:http'
import { Deadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { createFetch } from '../src/index.js'
import { useHttpServer } from './helpers.js'

interface Seen {
  method: string | undefined
  headers: IncomingMessage['headers']
  body: string
}

const listen = useHttpServer()

/** Records every request; answers 503 to the first `failFirst`, then 200 with the body it read. */
async function recording(failFirst = 0): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = []
  const base = await listen(async (req, res) => {
    let body = ''
    for await (const chunk of req) body += chunk
    seen.push({ method: req.method, headers: req.headers, body })
    res.statusCode = seen.length <= failFirst ? 503 : 200
    res.end(body || 'ok')
  })
  return { url: `${base}/path`, seen }
}

describe("Node's global Request (another copy of undici's class)", () => {
  it('a GET is sent as written, with its headers and the deadline', async () => {
    const { url, seen } = await recording()
    const fetch = createFetch()
    try {
      const res = await fetch(new globalThis.Request(url, { headers: { 'x-app': 'a' } }), {
        deadline: Deadline.after(5000),
      })
      expect(res.status).toBe(200)
      expect(await res.text()).toBe('ok')
    } finally {
      await fetch.close()
    }
    expect(seen).toHaveLength(1)
    expect(seen[0]).toMatchObject({ method: 'GET', headers: { 'x-app': 'a' } })
    expect(Number(seen[0]!.headers['x-deadline-remaining-ms'])).toBeGreaterThan(0)
  })

  it('a POST carries its body once, and is not retried (a Request body is sent once)', async () => {
    const { url, seen } = await recording(1)
    const fetch = createFetch({ retry: { statuses: [503] } })
    try {
      const request = new globalThis.Request(url, {
        method: 'POST',
        body: '{"q":1}',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'k1' },
      })
      const res = await fetch(request, { deadline: Deadline.after(5000) })
      expect(res.status).toBe(503)
      await res.body?.cancel()
    } finally {
      await fetch.close()
    }
    expect(seen).toEqual([expect.objectContaining({ method: 'POST', body: '{"q":1}' })])
  })

  it("as fetch takes one: used, it is refused with fetch's words; with an init body, its own is left unread", async () => {
    const { url, seen } = await recording()
    const fetch = createFetch()
    try {
      const used = new globalThis.Request(url, { method: 'POST', body: 'spent' })
      await used.text()
      // Before: "Response body object should not be disturbed or locked".
      await expect(fetch(used)).rejects.toThrow(
        'Cannot construct a Request with a Request object that has already been used.',
      )
      const request = new globalThis.Request(url, { method: 'POST', body: 'own' })
      const res = await fetch(request, { body: 'given', deadline: Deadline.after(5000) })
      expect(await res.text()).toBe('given')
      // As Node's fetch leaves it: the caller can still read or send it (it was locked for good).
      expect([request.bodyUsed, request.body?.locked]).toEqual([false, false])
    } finally {
      await fetch.close()
    }
    expect(seen.map((s) => s.body)).toEqual(['given'])
  })

  it('its own signal still cancels the call', async () => {
    const { url } = await recording()
    const controller = new AbortController()
    controller.abort(new Error('caller gave up'))
    const fetch = createFetch()
    try {
      await expect(
        fetch(new globalThis.Request(url, { signal: controller.signal })),
      ).rejects.toThrow('caller gave up')
    } finally {
      await fetch.close()
    }
  })
})

/**
 * Whether Node's own undici lets a Request's body source be read (undici 6:
 * Node 20, 22). Its undici 7 (Node 24) keeps it private: there, as the README
 * says, such a body is sent as a stream, chunked.
 */
const sourceReadable = Number(process.versions.undici?.split('.')[0] ?? 0) < 7

it.runIf(!sourceReadable)(
  "where Node's undici keeps a body's source private (Node 24), a global Request's string body goes chunked, whole, as the README says",
  async () => {
    const { url, seen } = await recording()
    const fetch = createFetch()
    try {
      const res = await fetch(new globalThis.Request(url, { method: 'POST', body: 'a string' }))
      expect(await res.text()).toBe('a string')
    } finally {
      await fetch.close()
    }
    expect(seen[0]?.headers['transfer-encoding']).toBe('chunked')
    expect(seen[0]?.body).toBe('a string')
  },
)

describe.skipIf(!sourceReadable)(
  "a global Request's body is framed as Node's own fetch frames it",
  () => {
    /** What a server sees of a body's framing, the form boundary made neutral. */
    const framing = (s: Seen) => {
      const boundary = /boundary=(.+)$/.exec(String(s.headers['content-type']))?.[1]
      const neutral = (v: string) => (boundary ? v.split(boundary).join('B') : v)
      return {
        method: s.method,
        contentType: neutral(String(s.headers['content-type'])),
        contentLength: s.headers['content-length'],
        transferEncoding: s.headers['transfer-encoding'],
        body: neutral(s.body),
      }
    }
    const form = () => {
      const f = new globalThis.FormData()
      f.append('a', 'one')
      f.append('file', new Blob(['two'], { type: 'text/plain' }), 'f.txt')
      return f
    }
    const bodies: Record<string, () => NonNullable<RequestInit['body']>> = {
      string: () => 'a string',
      ArrayBuffer: () => new TextEncoder().encode('bytes').buffer,
      Uint8Array: () => new TextEncoder().encode('view'),
      Blob: () => new Blob(['blob'], { type: 'application/x-blob' }),
      URLSearchParams: () => new URLSearchParams({ q: 'x y' }),
      FormData: form,
      ReadableStream: () => new Blob(['streamed']).stream(),
    }

    it.each(Object.keys(bodies))('a %s body', async (kind) => {
      const { url, seen } = await recording()
      const make = () =>
        new globalThis.Request(url, {
          method: 'POST',
          body: bodies[kind]!(),
          duplex: 'half',
        } as RequestInit)
      await (await globalThis.fetch(make())).arrayBuffer()
      const fetch = createFetch()
      try {
        await (await fetch(make(), { deadline: Deadline.after(5000) })).arrayBuffer()
      } finally {
        await fetch.close()
      }
      expect(seen.map(framing)[1]).toEqual(seen.map(framing)[0])
    })

    it('a string body follows a 307 and is sent again, as Node’s fetch does', async () => {
      const seen: string[] = []
      const base = await listen(async (req, res) => {
        let body = ''
        for await (const chunk of req) body += chunk
        seen.push(`${req.url} ${body}`)
        if (req.url === '/from') res.writeHead(307, { location: '/to' }).end()
        else res.end('ok')
      })
      const url = `${base}/from`
      const fetch = createFetch()
      try {
        const res = await fetch(new globalThis.Request(url, { method: 'POST', body: 'again' }))
        expect([res.status, await res.text()]).toEqual([200, 'ok'])
      } finally {
        await fetch.close()
      }
      expect(seen).toEqual(['/from again', '/to again'])
    })
  },
)
