import { Agent, FormData, request, Headers as UndiciHeaders } from 'undici'
import { expect, it } from 'vitest'
import { createFetch, deadlineInterceptor } from '../src/index.js'
import { useHttpServer } from './helpers.js'

const listen = useHttpServer()

/** Answers the first request to each path 503, the next 200; records what each request carried. */
async function busyOncePerPath(): Promise<{ base: string; seen: string[] }> {
  const seen: string[] = []
  const answered = new Set<string>()
  const base = await listen((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      seen.push(`${req.method} ${req.url} x-item=${req.headers['x-item']} ${Buffer.concat(chunks)}`)
      const first = !answered.has(req.url ?? '')
      answered.add(req.url ?? '')
      res.writeHead(first ? 503 : 200).end()
    })
  })
  return { base: `${base}`, seen }
}

/**
 * fetch reads its input and init when it is called (its Request is built
 * then). Each attempt read the caller's URL object, init and headers record
 * again: three PUTs made in a loop that reused them, each answered 503
 * once, were all retried to the last item's URL with its headers and body —
 * each caller answered 200 for item 3's write, items 1 and 2 never written.
 */
it('a retry sends what the call was made with, whatever the caller changed since', async () => {
  const { base, seen } = await busyOncePerPath()
  const fetch = createFetch({ retry: { statuses: [503] } })
  try {
    const url = new URL(`${base}/items/0`)
    const headers: Record<string, string> = {}
    const init: { method: string; headers: Record<string, string>; body?: string } = {
      method: 'PUT',
      headers,
    }
    const calls: Promise<number>[] = []
    for (const id of [1, 2, 3]) {
      url.pathname = `/items/${id}`
      headers['x-item'] = String(id)
      init.body = `item ${id}`
      calls.push(fetch(url, init).then((answer) => answer.status))
    }
    expect(await Promise.all(calls)).toEqual([200, 200, 200])
    expect(seen.toSorted()).toEqual([
      'PUT /items/1 x-item=1 item 1',
      'PUT /items/1 x-item=1 item 1',
      'PUT /items/2 x-item=2 item 2',
      'PUT /items/2 x-item=2 item 2',
      'PUT /items/3 x-item=3 item 3',
      'PUT /items/3 x-item=3 item 3',
    ])
  } finally {
    await fetch.close()
  }
})

/**
 * fetch reads an init's members by `[[Get]]`, a prototype's included (an
 * init made with `Object.create(defaults)`). Each attempt copied the init's
 * own members alone: the method and headers the defaults gave were
 * dropped, and the PUT failed with undici's "Request with GET/HEAD method
 * cannot have body", nothing sent.
 */
it('an init member inherited from a prototype is read, as fetch reads it', async () => {
  const { base, seen } = await busyOncePerPath()
  const fetch = createFetch({ retry: { statuses: [503] } })
  try {
    const defaults = { method: 'PUT', headers: { 'x-item': '7' } }
    const answer = await fetch(
      `${base}/items/7`,
      Object.assign(Object.create(defaults), { body: 'seven' }),
    )
    expect(answer.status).toBe(200)
    expect(seen).toEqual(['PUT /items/7 x-item=7 seven', 'PUT /items/7 x-item=7 seven'])
  } finally {
    await fetch.close()
  }
})

/**
 * The retry rules judge the request the call was made with: an
 * Idempotency-Key the caller removed from its headers record after the
 * call (a record reused for the next, unkeyed request) was read again at
 * the 503, and the POST sent with that key was returned unretried,
 * `not-idempotent`.
 */
it('an Idempotency-Key the caller removes after the call still makes its POST safe to repeat', async () => {
  const { base, seen } = await busyOncePerPath()
  const fetch = createFetch({ retry: { statuses: [503] } })
  try {
    const headers: Record<string, string> = { 'idempotency-key': 'k1', 'x-item': '1' }
    const call = fetch(`${base}/orders`, { method: 'POST', headers, body: 'order 1' })
    delete headers['idempotency-key']
    expect((await call).status).toBe(200)
    expect(seen).toEqual(['POST /orders x-item=1 order 1', 'POST /orders x-item=1 order 1'])
  } finally {
    await fetch.close()
  }
})

/**
 * fetch extracts a form body when it is called. Each attempt extracted the
 * caller's `URLSearchParams` or undici's `FormData` again: one reused for
 * the next call (`form.set('item', next)`) had the retry send the next
 * call's form. (Node's global FormData was copied already, rebuilt as undici's.)
 */
it('a form body reused for the next call is retried as it was when its call was made', async () => {
  const { base, seen } = await busyOncePerPath()
  const fetch = createFetch({ retry: { statuses: [503] } })
  try {
    const params = new URLSearchParams()
    const form = new FormData()
    const calls: Promise<number>[] = []
    for (const id of ['1', '2']) {
      params.set('item', id)
      form.set('item', id)
      calls.push(
        fetch(`${base}/params/${id}`, { method: 'PUT', body: params }).then((r) => r.status),
      )
      calls.push(fetch(`${base}/form/${id}`, { method: 'PUT', body: form }).then((r) => r.status))
    }
    expect(await Promise.all(calls)).toEqual([200, 200, 200, 200])
    const sent = seen.map((line) =>
      line.replace(/\r\n/g, ' ').replace(/-+formdata-undici-\d+-*/g, '--'),
    )
    for (const id of ['1', '2']) {
      expect(sent.filter((line) => line.startsWith(`PUT /params/${id} `))).toEqual([
        `PUT /params/${id} x-item=undefined item=${id}`,
        `PUT /params/${id} x-item=undefined item=${id}`,
      ])
      const forms = sent.filter((line) => line.startsWith(`PUT /form/${id} `))
      expect(forms).toHaveLength(2)
      for (const line of forms) expect(line).toContain(`name="item"  ${id}`)
    }
  } finally {
    await fetch.close()
  }
})

/**
 * undici reads a request's headers once, when it is dispatched. The
 * interceptor's retries read the caller's record again: one reused for the
 * next request had each retry sent with the last request's headers.
 */
it('interceptor: a retry sends the headers its request was dispatched with', async () => {
  const { base, seen } = await busyOncePerPath()
  const agent = new Agent({ headersTimeout: 0, bodyTimeout: 0 })
  const dispatcher = agent.compose(deadlineInterceptor({ retry: { statuses: [503] } }))
  try {
    const headers: Record<string, string> = {}
    const calls: Promise<number>[] = []
    for (const id of ['1', '2', '3']) {
      headers['x-item'] = id
      const sent = request(`${base}/i/${id}`, {
        method: 'PUT',
        headers,
        body: `item ${id}`,
        dispatcher,
      })
      calls.push(
        sent.then(async ({ statusCode, body }) => {
          await body.text()
          return statusCode
        }),
      )
    }
    expect(await Promise.all(calls)).toEqual([200, 200, 200])
    expect(seen.toSorted()).toEqual([
      'PUT /i/1 x-item=1 item 1',
      'PUT /i/1 x-item=1 item 1',
      'PUT /i/2 x-item=2 item 2',
      'PUT /i/2 x-item=2 item 2',
      'PUT /i/3 x-item=3 item 3',
      'PUT /i/3 x-item=3 item 3',
    ])
  } finally {
    await agent.close()
  }
})

// A Map's value array changed after dispatch reached the retry (W2).
it('interceptor: a Map of headers is taken with its value arrays', async () => {
  const { base, seen } = await busyOncePerPath()
  const agent = new Agent({ headersTimeout: 0, bodyTimeout: 0 })
  const dispatcher = agent.compose(deadlineInterceptor({ retry: { statuses: [503] } }))
  try {
    const values = ['1']
    const sent = request(`${base}/m`, {
      method: 'PUT',
      headers: new Map([['x-item', values]]) as never,
      body: 'item',
      dispatcher,
    })
    values[0] = 'CHANGED'
    const { statusCode, body } = await sent
    await body.text()
    expect(statusCode).toBe(200)
    expect(seen).toEqual(['PUT /m x-item=1 item', 'PUT /m x-item=1 item'])
  } finally {
    await agent.close()
  }
})

/**
 * Taken as undici's fetch takes a `HeadersInit` (reviewer rD): a copy by the
 * dispatcher's rules dropped a record's non-enumerable key (a token kept out
 * of logs with `Object.defineProperty`: the request went without it) and
 * sent an undici `Headers`' names lower-cased and sorted.
 */
it('headers are taken as fetch takes them: non-enumerable keys sent, an undici Headers in its own case and order', async () => {
  const raw: string[][] = []
  const base = await listen((req, res) => {
    raw.push(req.rawHeaders.filter((_, i) => i % 2 === 0 && req.rawHeaders[i]!.startsWith('X-')))
    res.end()
  })
  const url = `${base}/`
  const fetch = createFetch()
  try {
    const record: Record<string, string> = { 'X-A': '1' }
    Object.defineProperty(record, 'X-Token', { value: 'secret', enumerable: false })
    await (await fetch(url, { headers: record })).arrayBuffer()
    await (
      await fetch(url, {
        headers: new UndiciHeaders([
          ['X-Zeta', '1'],
          ['X-Alpha', '2'],
        ]),
      })
    ).arrayBuffer()
    expect(raw).toEqual([
      ['X-A', 'X-Token'],
      ['X-Zeta', 'X-Alpha'],
    ])
  } finally {
    await fetch.close()
  }
})
