import { FormData } from 'undici'
import { expect, it } from 'vitest'
import { createFetch } from '../src/index.js'
import { useHttpServer } from './helpers.js'

// fetch follows a 307/308 with a FormData body by extracting the form again
// (the fetch spec's redirect step 14), which draws a new multipart boundary,
// and keeps the Content-Type of the first request, which names the old one
// (nodejs/undici#4065): the target got a body split on a boundary its
// Content-Type did not name, and a multipart parser found no part at all.
// The README offers FormData as a body a redirect can send again.

const listen = useHttpServer()

interface Seen {
  url: string | undefined
  type: string | undefined
  length: string | undefined
  body: string
}

/** `/moved` answers `status` to `/target`; every request's type and body are kept. */
async function redirecting(status: number): Promise<{ base: string; seen: Seen[] }> {
  const seen: Seen[] = []
  const base = await listen((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString()
      seen.push({
        url: req.url,
        type: req.headers['content-type'],
        length: req.headers['content-length'],
        body,
      })
      if (req.url === '/moved') res.writeHead(status, { location: '/target' }).end()
      else res.end('done')
    })
  })
  return { base: `${base}`, seen }
}

/** The boundary a multipart Content-Type names, and whether the body is split on it. */
function splitOnItsBoundary(seen: Seen): boolean {
  const boundary = /boundary=(.+)$/.exec(seen.type ?? '')?.[1]
  return (
    boundary !== undefined &&
    seen.body.startsWith(`--${boundary}\r\n`) &&
    seen.body.endsWith(`--${boundary}--\r\n`) &&
    Number(seen.length) === Buffer.byteLength(seen.body)
  )
}

it.each([307, 308])(
  'a FormData body followed through a %i is sent with the boundary its Content-Type names',
  async (status) => {
    const { base, seen } = await redirecting(status)
    const fetch = createFetch()
    try {
      const form = new FormData()
      form.append('name', 'value')
      form.append('file', new Blob(['contents'], { type: 'text/plain' }), 'a.txt')
      const res = await fetch(`${base}/moved`, { method: 'POST', body: form })
      expect(await res.text()).toBe('done')
      expect(seen.map((s) => s.url)).toEqual(['/moved', '/target'])
      // Before: the target's Content-Type named the first request's boundary.
      expect(seen.map(splitOnItsBoundary)).toEqual([true, true])
      // The same form, part for part.
      const parts = (s: Seen) => s.body.split(/--\S+/).join('|')
      expect(parts(seen[1] as Seen)).toBe(parts(seen[0] as Seen))
    } finally {
      await fetch.close()
    }
  },
)

it("Node's global FormData, followed through a 307, keeps its boundary too", async () => {
  const { base, seen } = await redirecting(307)
  const fetch = createFetch()
  try {
    const form = new globalThis.FormData()
    form.append('name', 'value')
    const res = await fetch(`${base}/moved`, { method: 'PUT', body: form })
    expect(await res.text()).toBe('done')
    expect(seen.map(splitOnItsBoundary)).toEqual([true, true])
  } finally {
    await fetch.close()
  }
})

it('a Content-Type of the caller’s own is left as the caller gave it', async () => {
  const { base, seen } = await redirecting(307)
  const fetch = createFetch()
  try {
    const form = new FormData()
    form.append('name', 'value')
    const res = await fetch(`${base}/moved`, {
      method: 'PUT',
      body: form,
      headers: { 'content-type': 'multipart/form-data; boundary=mine' },
    })
    expect(await res.text()).toBe('done')
    expect(seen.map((s) => s.type)).toEqual([
      'multipart/form-data; boundary=mine',
      'multipart/form-data; boundary=mine',
    ])
  } finally {
    await fetch.close()
  }
})

// Node's undici 7 (Node 24) keeps a Request body's source private: such a
// form goes as a stream, chunked, and cannot follow a 308 (README).
const sourceReadable = Number(process.versions.undici?.split('.')[0] ?? 0) < 7

it.skipIf(!sourceReadable)(
  'a global Request made with a FormData body, followed through a 308, keeps its boundary too',
  async () => {
    const { base, seen } = await redirecting(308)
    const fetch = createFetch()
    try {
      const form = new globalThis.FormData()
      form.append('name', 'value')
      const res = await fetch(
        new globalThis.Request(`${base}/moved`, { method: 'POST', body: form }),
      )
      expect(await res.text()).toBe('done')
      expect(seen.map(splitOnItsBoundary)).toEqual([true, true])
    } finally {
      await fetch.close()
    }
  },
)
