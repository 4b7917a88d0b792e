import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { createFetch, type HourglassFetch } from '../src/index.js'

// Node's global FormData comes from the copy of undici bundled with Node, a
// class npm's undici does not recognise: its fetch sent it as the text
// "[object FormData]" with `content-type: text/plain`, and with
// `retry.statuses` sent that text twice. createFetch rebuilds it as undici's
// own, as it does Node's global Request. No test here measures time.

interface Seen {
  contentType: string | undefined
  body: string
}

let server: Server | undefined
let fetch: HourglassFetch | undefined
afterEach(async () => {
  await fetch?.close()
  fetch = undefined
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

/** Records every request; answers 503 to the first `failFirst`, then 200. */
async function recording(failFirst = 0): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = []
  server = createServer(async (req, res) => {
    let body = ''
    for await (const chunk of req) body += chunk
    seen.push({ contentType: req.headers['content-type'], body })
    res.statusCode = seen.length <= failFirst ? 503 : 200
    res.end('ok')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/upload`, seen }
}

function globalForm(): globalThis.FormData {
  const form = new globalThis.FormData()
  form.append('name', 'value')
  form.append('file', new globalThis.File(['file contents'], 'report.txt', { type: 'text/plain' }))
  form.append('blob', new globalThis.Blob(['blob contents']))
  return form
}

/** A multipart body's parts, by field name: its file name (if any) and content. */
function parts(seen: Seen): Record<string, { filename: string | undefined; content: string }> {
  const boundary = /boundary=(.+)$/.exec(seen.contentType ?? '')?.[1]
  expect(boundary, `content-type ${seen.contentType}`).toBeDefined()
  const out: Record<string, { filename: string | undefined; content: string }> = {}
  for (const part of seen.body.split(`--${boundary}`)) {
    const match = /name="([^"]*)"(?:; filename="([^"]*)")?[\s\S]*?\r\n\r\n([\s\S]*)\r\n$/.exec(part)
    if (match) out[match[1]!] = { filename: match[2], content: match[3]! }
  }
  return out
}

describe("Node's global FormData (another copy of undici's class)", () => {
  it('is sent as multipart form data, its strings, files and file names carried over', async () => {
    const { url, seen } = await recording()
    fetch = createFetch()
    const res = await fetch(url, {
      method: 'POST',
      body: globalForm() as never,
      deadline: Deadline.after(5000),
    })
    expect(res.status).toBe(200)
    await res.text()
    expect(seen).toHaveLength(1)
    expect(seen[0]!.contentType).toMatch(/^multipart\/form-data; boundary=/)
    expect(seen[0]!.body).not.toContain('[object FormData]')
    expect(parts(seen[0]!)).toEqual({
      name: { filename: undefined, content: 'value' },
      file: { filename: 'report.txt', content: 'file contents' },
      blob: { filename: 'blob', content: 'blob contents' },
    })
  })

  it('a status retry sends the same form again, whole', async () => {
    const { url, seen } = await recording(1)
    fetch = createFetch({ retry: { statuses: [503] } })
    const res = await fetch(url, {
      method: 'PUT',
      body: globalForm() as never,
      deadline: Deadline.after(5000),
    })
    expect(res.status).toBe(200)
    await res.text()
    expect(seen).toHaveLength(2)
    for (const one of seen) {
      expect(one.contentType).toMatch(/^multipart\/form-data; boundary=/)
      expect(parts(one).file).toEqual({ filename: 'report.txt', content: 'file contents' })
    }
  })

  it('inside a global Request it is sent as multipart too', async () => {
    const { url, seen } = await recording()
    fetch = createFetch()
    const res = await fetch(new globalThis.Request(url, { method: 'POST', body: globalForm() }))
    expect(res.status).toBe(200)
    await res.text()
    expect(seen[0]!.contentType).toMatch(/^multipart\/form-data; boundary=/)
    expect(parts(seen[0]!).file).toEqual({ filename: 'report.txt', content: 'file contents' })
  })
})
