import { once } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, get, type Server, type ServerResponse } from 'node:http'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ManualClock } from '@hourglass/core'
import { RetryBudgetRegistry } from '@hourglass/llm'
import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { ENDED_STALL_MS } from '../../src/http/flushedOrCut.js'
import { createGateway, type GatewayRouter, type LogRecord } from '../../src/index.js'
import { fakeProvider, fallback } from '../support/harness.js'

// 1 MB of answer: past what a Unix socket buffers (its send buffer, about
// 200 kB by default, is all that stands between a writer and a reader that
// reads nothing), so the gateway cannot hand it all to the OS. Over TCP
// loopback it takes ~20 MB (stalledReader.test.ts, a timing file).
const ANSWER = ` ${'abcdefghij'.repeat(200)}`.repeat(500).slice(1)

/**
 * A client that keeps its connection open and does not read its answer.
 * Non-streamed, the answer sits in the socket's buffer, and the socket stays
 * open, for as long as the client stays connected — unless the gateway
 * bounds it as it bounds a stream whose client stops reading
 * (stalledReader.test.ts): at the request's deadline the connection is
 * closed, logged and counted. A client that leaves while the gateway waits
 * on it is a 499, streamed or not, not a cut.
 */
/**
 * The request's one log line says the client closed (499, `client_closed`),
 * and /metrics counts it so: one `client_closed` error, one 4xx.
 */
async function expectOneClientClosed(
  run: { lines: LogRecord[]; metrics(): Promise<string> },
  requestId: string,
  stream: boolean,
): Promise<void> {
  expect(run.lines).toHaveLength(1)
  expect(run.lines[0]).toMatchObject({ requestId, stream, status: 499, error: 'client_closed' })
  const page = await run.metrics()
  expect(page).toMatch(/hourglass_gateway_errors_total\{kind="client_closed"\} 1/)
  expect(page).toMatch(/hourglass_gateway_requests_total\{status_class="4xx"\} 1/)
}

describe('a client that does not read its answer', () => {
  let dir: string | undefined
  let fake: FakeProvider | undefined
  let gateway: GatewayRouter | undefined
  let server: Server | undefined
  let socket: Socket | undefined
  /** A provider the test writes each event of (`endsIntoFullSocket`). */
  let upstream: Server | undefined
  afterEach(async () => {
    socket?.destroy()
    server?.closeAllConnections()
    if (server) await new Promise((resolve) => server?.close(resolve))
    await gateway?.close()
    await fake?.close()
    upstream?.closeAllConnections()
    if (upstream) await new Promise((resolve) => upstream?.close(resolve))
    if (dir) await rm(dir, { recursive: true, force: true })
    dir = fake = gateway = server = socket = upstream = undefined
  })

  /**
   * The gateway on a Unix socket (small buffers: 1 MB fills them), its
   * deadlines on a clock the test moves, its request lines collected, and a
   * client that sent `body`, read the answer's first bytes and stopped.
   * `waiting` resolves once the gateway's write found the socket full.
   */
  async function unreadRequest(
    body: Record<string, unknown>,
    retry?: { count: number; budgets: RetryBudgetRegistry },
    /** How many requests the client sends at once on its connection (pipelined). */
    requests = 1,
  ) {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    fake.setReply(reply.text(ANSWER))
    const lines: LogRecord[] = []
    let logged: () => void = () => {}
    const requestLogged = new Promise<void>((resolve) => {
      logged = resolve
    })
    // Nothing waits the 60 s: the test moves this clock.
    const clock = new ManualClock()
    gateway = createGateway(
      {
        providers: { p: provider.entry },
        models: { m: fallback(['p', 'gpt']) },
        deadline: { defaultMs: 60_000, reserveMs: 10 },
      },
      {
        clock,
        ...(retry ? { retryBudgets: retry.budgets } : {}),
        logger: (record) => {
          if (record['event'] !== 'request') return
          lines.push(record)
          logged()
        },
      },
    )
    const router = gateway
    let full: () => void = () => {}
    const waiting = new Promise<void>((resolve) => {
      full = resolve
    })
    let answering: ServerResponse | undefined
    server = createServer((req, res) => {
      answering = res
      // The gateway waits on the socket from the moment a write is refused.
      const write = res.write
      res.write = function (this: typeof res, ...args: Parameters<typeof res.write>) {
        const taken = write.apply(this, args)
        if (!taken) full()
        return taken
      } as typeof res.write
      router(req as never, res as never, () => res.end())
    })
    dir = await mkdtemp(join(tmpdir(), 'hourglass-unread-'))
    const path = join(dir, 'gateway.sock')
    server.listen(path)
    await once(server, 'listening')

    const client = connect(path)
    socket = client
    client.on('error', () => {})
    await once(client, 'connect')
    const text = JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: 'all' }],
      ...body,
    })
    let sent = ''
    for (let n = 1; n <= requests; n++) {
      sent +=
        'POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\ncontent-type: application/json\r\n' +
        (retry ? `x-stainless-retry-count: ${retry.count}\r\n` : '') +
        `x-request-id: unread-${n}\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`
    }
    client.write(sent)
    const [head] = (await once(client, 'data')) as [Buffer]
    client.pause()
    const metrics = () =>
      new Promise<string>((resolve, reject) => {
        get({ socketPath: path, path: '/metrics' }, (res) => {
          let page = ''
          res.setEncoding('utf8').on('data', (chunk: string) => (page += chunk))
          res.on('end', () => resolve(page))
        }).on('error', reject)
      })
    /**
     * The gateway parked on the client for good: a write of its waits for
     * 'drain' with bytes queued past what the kernel takes, and the paused
     * client has stopped pulling from the kernel (its buffer full). Until
     * then the client still takes bytes, a 'drain' follows, and the handler
     * may be waiting on the provider instead. Turns of the event loop, not time.
     */
    const parked = async () => {
      const connection = () =>
        answering?.socket as (Socket & { _handle?: { writeQueueSize?: number } }) | undefined
      for (let turn = 0; turn < 100_000; turn++) {
        if (
          client.readableLength >= client.readableHighWaterMark &&
          (answering?.listenerCount('drain') ?? 0) > 0 &&
          (connection()?._handle?.writeQueueSize ?? 0) > 0
        ) {
          return
        }
        await new Promise((resolve) => setImmediate(resolve))
      }
      throw new Error('the gateway never parked on the unread stream')
    }
    /** The gateway's side of the connection. */
    const connection = () => answering?.req.socket
    return {
      clock,
      client,
      head,
      lines,
      requestLogged,
      waiting,
      parked,
      metrics,
      provider,
      connection,
    }
  }

  it('non-streamed: cut at its deadline, one request line with deadline_exceeded, counted, socket closed', async () => {
    const run = await unreadRequest({})
    // The answer was written whole (res.end) in the turn of the event loop
    // that then waits on it: by the time its first bytes arrive, it waits.
    expect(run.head.toString('latin1')).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
    const length = Number(/content-length: (\d+)/i.exec(run.head.toString('latin1'))?.[1])
    expect(length).toBeGreaterThan(ANSWER.length)
    const closed = once(run.client, 'close')

    // The deadline passes with the answer still unread.
    run.clock.advance(60_000)
    await run.requestLogged
    expect(run.lines).toHaveLength(1)
    expect(run.lines[0]).toMatchObject({
      requestId: 'unread-1',
      stream: false,
      status: 200,
      error: 'deadline_exceeded',
    })
    const page = await run.metrics()
    expect(page).toMatch(/hourglass_gateway_errors_total\{kind="deadline_exceeded"\} 1/)
    expect(page).not.toMatch(/kind="client_closed"/)
    // What was buffered drains, then the connection ends short of the answer: it is not held open.
    let bodyBytes = run.head.length - (run.head.indexOf('\r\n\r\n') + 4)
    run.client.on('data', (chunk: Buffer) => {
      bodyBytes += chunk.length
    })
    run.client.resume()
    await closed
    expect(bodyBytes).toBeLessThan(length)
  })

  it('non-streamed, and the client leaves while the gateway waits on its full socket: 499 client_closed, logged as counted', async () => {
    const run = await unreadRequest({})
    // The answer was written whole (res.end) in the turn that then waits on it.
    expect(run.head.toString('latin1')).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
    run.client.destroy()
    await run.requestLogged
    await expectOneClientClosed(run, 'unread-1', false)
  })

  /**
   * Reads the first answer on `client` (its first bytes in `head`) to its
   * last byte and closes the connection in the same turn, the moment it has
   * it all: Node may still be writing the empty chunk that ends the
   * response, and the close can fail that write though every byte went.
   * Resolves with that answer's body.
   */
  function takeFirstAnswerThenLeave(client: Socket, head: Buffer): Promise<Buffer> {
    const length = Number(/content-length: (\d+)/i.exec(head.toString('latin1'))?.[1])
    const total = head.indexOf('\r\n\r\n') + 4 + length
    const chunks = [head]
    let received = head.length
    return new Promise((resolve) => {
      const onData = (chunk: Buffer) => {
        chunks.push(chunk)
        received += chunk.length
        if (received < total) return
        client.off('data', onData)
        client.destroy()
        resolve(Buffer.concat(chunks).subarray(total - length, total))
      }
      client.on('data', onData)
      client.resume()
    })
  }

  // Node can fail the empty write that carries its 'finish' when the client
  // closes right after the last byte: the socket has an error then, though
  // the answer was delivered. Read as lost, it was logged 499 and counted 4xx.
  it('non-streamed, read whole and then the connection closed: logged and counted answered', async () => {
    const run = await unreadRequest({})
    const body = await takeFirstAnswerThenLeave(run.client, run.head)
    expect(JSON.parse(body.toString('utf8')).choices[0].message.content).toBe(ANSWER)
    await run.requestLogged
    expect(run.lines).toHaveLength(1)
    expect(run.lines[0]).toMatchObject({ requestId: 'unread-1', stream: false, status: 200 })
    expect(run.lines[0]?.['error']).toBeUndefined()
    const page = await run.metrics()
    expect(page).toMatch(/hourglass_gateway_requests_total\{status_class="2xx"\} 1/)
    expect(page).toMatch(/hourglass_gateway_requests_total\{status_class="4xx"\} 0/)
    expect(page).not.toMatch(/kind="client_closed"\} [1-9]/)
  })

  // The second answer is what the client left before taking: only it is a 499.
  it('non-streamed, two pipelined, the first read whole and then the connection closed: the first logged and counted answered', async () => {
    const run = await unreadRequest({}, undefined, 2)
    const body = await takeFirstAnswerThenLeave(run.client, run.head)
    expect(JSON.parse(body.toString('utf8')).choices[0].message.content).toBe(ANSWER)
    for (let turn = 0; turn < 100_000 && run.lines.length < 2; turn++) {
      await new Promise((resolve) => setImmediate(resolve))
    }
    expect(run.lines).toHaveLength(2)
    const first = run.lines.find((line) => line['requestId'] === 'unread-1')
    expect(first).toMatchObject({ stream: false, status: 200 })
    expect(first?.['error']).toBeUndefined()
    expect(run.lines.find((line) => line['requestId'] === 'unread-2')).toMatchObject({
      status: 499,
      error: 'client_closed',
    })
    const page = await run.metrics()
    expect(page).toMatch(/hourglass_gateway_requests_total\{status_class="2xx"\} 1/)
    expect(page).toMatch(/hourglass_gateway_requests_total\{status_class="4xx"\} 1/)
    expect(page).toMatch(/hourglass_gateway_errors_total\{kind="client_closed"\} 1/)
  })

  // Each answer waiting its turn watched the connection with a listener of
  // its own: a dozen pipelined, unread, passed Node's limit of 10
  // (MaxListenersExceededWarning on the gateway's stderr, by any client).
  it('non-streamed, a dozen pipelined and unread: one listener on the connection, whatever waits on it', async () => {
    const run = await unreadRequest({}, undefined, 12)
    for (let turn = 0; turn < 100_000 && run.provider.fake.requests.length < 12; turn++) {
      await new Promise((resolve) => setImmediate(resolve))
    }
    for (let turn = 0; turn < 50; turn++) await new Promise((resolve) => setImmediate(resolve))
    expect(run.provider.fake.requests).toHaveLength(12)
    expect(run.connection()?.listenerCount('error')).toBeLessThanOrEqual(2)
    run.client.destroy()
  })

  it('streamed, and the client leaves while the gateway waits on its full socket: 499 client_closed, not a cut', async () => {
    const run = await unreadRequest({ stream: true })
    await run.waiting
    run.client.destroy()
    await run.requestLogged
    await expectOneClientClosed(run, 'unread-1', true)
  })

  // The client's retry is no provider's failure when the client is what
  // stalls: its charge is refunded, as a non-streamed answer's is. A
  // stream cut this way kept it, and stalled streaming retries — the
  // header alone — drained a provider's budget for everyone.
  it('streamed retry cut at its deadline because its client stopped reading: its retry-budget charge is refunded', async () => {
    const budgets = new RetryBudgetRegistry({ maxTokens: 10, tokenRatio: 0.1 })
    const run = await unreadRequest({ stream: true }, { count: 1, budgets })
    await run.waiting
    await run.parked()
    const budget = budgets.forProvider({ name: 'p', baseURL: run.provider.fake.baseURL })
    expect(budget.tokens).toBe(9)
    run.clock.advance(60_000)
    await run.requestLogged
    expect(run.lines[0]).toMatchObject({ stream: true, status: 200, error: 'deadline_exceeded' })
    expect(budget.tokens).toBe(10)
  })

  /**
   * A stream whose provider the test writes each event of, through the
   * gateway on a Unix socket (deadlines on a clock the test moves), to a
   * client that read its first bytes and stopped: returns once the last
   * event written is waiting in the socket with no write refused (each
   * event is under the write buffer's mark: nothing waits on 'drain').
   */
  async function streamIntoFullSocket() {
    let answerTo: ServerResponse | undefined
    upstream = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        answerTo = res
      })
    })
    upstream.listen(0, '127.0.0.1')
    await once(upstream, 'listening')
    const { port } = upstream.address() as { port: number }
    const event = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
    const clock = new ManualClock()
    const lines: LogRecord[] = []
    let logged: () => void = () => {}
    const requestLogged = new Promise<void>((resolve) => {
      logged = resolve
    })
    gateway = createGateway(
      {
        providers: {
          p: { dialect: 'openai', baseURL: `http://127.0.0.1:${port}/v1`, apiKeys: ['k'] },
        },
        models: { m: fallback(['p', 'gpt']) },
        deadline: { defaultMs: 60_000, reserveMs: 10 },
      },
      {
        clock,
        logger: (record) => {
          if (record['event'] !== 'request') return
          lines.push(record)
          logged()
        },
      },
    )
    const router = gateway
    let answering: ServerResponse | undefined
    let writes = 0
    server = createServer((req, res) => {
      // The stream's: a later request on another connection is a scrape.
      if (answering !== undefined) return router(req as never, res as never, () => res.end())
      answering = res
      const write = res.write
      res.write = function (this: typeof res, ...args: Parameters<typeof res.write>) {
        writes++
        return write.apply(this, args)
      } as typeof res.write
      router(req as never, res as never, () => res.end())
    })
    dir = await mkdtemp(join(tmpdir(), 'hourglass-unread-'))
    const path = join(dir, 'gateway.sock')
    server.listen(path)
    await once(server, 'listening')
    const client = connect(path)
    socket = client
    client.on('error', () => {})
    await once(client, 'connect')
    const text = JSON.stringify({
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: 'all' }],
    })
    client.write(
      'POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\ncontent-type: application/json\r\n' +
        `x-request-id: unread-end\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
    )
    /** Turns of the event loop, not time. */
    const until = async (done: () => boolean) => {
      for (let turn = 0; turn < 100_000 && !done(); turn++) {
        await new Promise((resolve) => setImmediate(resolve))
      }
      expect(done()).toBe(true)
    }
    await until(() => answerTo !== undefined)
    answerTo?.write(event({ role: 'assistant', content: 'a' }))
    await once(client, 'data')
    client.pause()
    // 8 KB events until the OS holds no more of them.
    const piece = 'b'.repeat(8192)
    while ((answering?.socket?.writableLength ?? 0) === 0) {
      const before = writes
      answerTo?.write(event({ content: piece }))
      await until(() => writes > before)
    }
    expect(answering?.writableNeedDrain).toBe(false)
    return {
      clock,
      client,
      lines,
      requestLogged,
      until,
      ended: () => answering?.writableEnded === true,
      /** The gateway closed the stream's response (its connection cut). */
      closed: () => answering?.destroyed === true,
      metrics: () =>
        new Promise<string>((resolve, reject) => {
          get({ socketPath: path, path: '/metrics' }, (res) => {
            let page = ''
            res.setEncoding('utf8').on('data', (chunk: string) => (page += chunk))
            res.on('end', () => resolve(page))
          }).on('error', reject)
        }),
      /** The provider's last events: its finish, then `[DONE]`. */
      finish: () => answerTo?.end(`${event({}, 'stop')}data: [DONE]\n\n`),
    }
  }

  // Not waited for, the request was logged answered at once (200, no
  // error) and the socket, the end buffered in it, stayed open past the
  // deadline for as long as the client stayed connected.
  it('streamed, ending into the full socket of a client that stopped reading: cut at its deadline, logged and counted', async () => {
    const run = await streamIntoFullSocket()
    run.finish()
    await run.until(run.ended)

    run.clock.advance(60_000)
    await run.requestLogged
    expect(run.lines).toHaveLength(1)
    expect(run.lines[0]).toMatchObject({
      requestId: 'unread-end',
      stream: true,
      status: 200,
      error: 'deadline_exceeded',
    })
    expect(await run.metrics()).toMatch(
      /hourglass_gateway_errors_total\{kind="deadline_exceeded"\} 1/,
    )
    // Not held open: what was buffered drains, then the connection ends.
    const closed = once(run.client, 'close')
    run.client.resume()
    await closed
  })

  // Node says 'finish' for an end its client reset before taking: read as
  // delivered, it was logged 200 and counted 2xx.
  it('streamed, its client leaving while the end waits on its full socket: 499 client_closed, logged as counted', async () => {
    const run = await streamIntoFullSocket()
    run.finish()
    await run.until(run.ended)
    run.client.destroy()
    await run.requestLogged
    await expectOneClientClosed(run, 'unread-end', true)
  })

  // The stream failed first: its end carries the deadline's error event,
  // and the client leaving before taking it changes nothing of that.
  it('streamed, ended by its own deadline, its client leaving while that end waits: 200 deadline_exceeded at warn, logged as counted', async () => {
    const run = await streamIntoFullSocket()
    run.clock.advance(59_980)
    await run.until(run.ended)
    run.client.destroy()
    await run.requestLogged
    expect(run.lines).toHaveLength(1)
    expect(run.lines[0]).toMatchObject({
      requestId: 'unread-end',
      level: 'warn',
      stream: true,
      status: 200,
      error: 'deadline_exceeded',
    })
    const page = await run.metrics()
    expect(page).toMatch(/hourglass_gateway_requests_total\{status_class="2xx"\} 1/)
    expect(page).toMatch(/hourglass_gateway_errors_total\{kind="deadline_exceeded"\} 1/)
    expect(page).not.toMatch(/kind="client_closed"/)
  })

  // The order a real clock gives: the gateway's own deadline runs out
  // `replyReserveMs` before the ingress middleware's and ends the stream
  // with its error event — into the same full socket. That end was not
  // waited for (the deadline was over), and nothing else bounded it: the
  // ingress middleware's grace is not armed once the error event reported
  // the expiry. The socket was held for as long as the client stayed, the
  // request never counted (requests_total 0).
  it("streamed, its own deadline running out first while the client is not reading: the error event's end is cut once it stalls, and counted", async () => {
    const run = await streamIntoFullSocket()
    // The handler's deadline (60 000 less the ingress's 10 and
    // replyReserveMs' 25) is over; the ingress middleware's (59 990) not yet.
    run.clock.advance(59_980)
    await run.until(run.ended)
    expect(run.closed()).toBe(false)

    run.clock.advance(ENDED_STALL_MS)
    await run.requestLogged
    expect(run.lines).toHaveLength(1)
    expect(run.lines[0]).toMatchObject({
      requestId: 'unread-end',
      stream: true,
      status: 200,
      error: 'deadline_exceeded',
    })
    await run.until(run.closed)
    const page = await run.metrics()
    expect(page).toMatch(/hourglass_gateway_requests_total\{status_class="2xx"\} 1/)
    expect(page).toMatch(/hourglass_gateway_errors_total\{kind="deadline_exceeded"\} 1/)
  })

  // Its end waited for its turn past its deadline, and was then delivered
  // whole: that is no expiry, as for a non-streamed answer queued alike.
  // It was logged `warn`, `deadline_exceeded`, and counted as one.
  it('streamed, pipelined behind another stream on its connection past its deadline, then delivered whole: logged and counted answered', async () => {
    /** Ends the stream ahead: its provider's last events. */
    let finishAhead: (() => void) | undefined
    upstream = createServer((req, res) => {
      let body = ''
      req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk))
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        const event = (delta: object, finish: string | null = null) =>
          `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
        const last = `${event({ content: 'done' }, 'stop')}data: [DONE]\n\n`
        if (!body.includes('"slow"')) return res.end(last)
        res.write(event({ role: 'assistant', content: 'a' }))
        finishAhead = () => res.end(last)
      })
    })
    upstream.listen(0, '127.0.0.1')
    await once(upstream, 'listening')
    const { port } = upstream.address() as { port: number }
    const clock = new ManualClock()
    const lines: LogRecord[] = []
    gateway = createGateway(
      {
        providers: {
          p: { dialect: 'openai', baseURL: `http://127.0.0.1:${port}/v1`, apiKeys: ['k'] },
        },
        models: { m: fallback(['p', 'gpt']), s: fallback(['p', 'slow']) },
        deadline: { defaultMs: 60_000, reserveMs: 10 },
      },
      { clock, logger: (record) => record['event'] === 'request' && lines.push(record) },
    )
    const router = gateway
    const behind: ServerResponse[] = []
    server = createServer((req, res) => {
      if (req.headers['x-request-id'] === 'behind') behind.push(res)
      router(req as never, res as never, () => res.end())
    })
    dir = await mkdtemp(join(tmpdir(), 'hourglass-unread-'))
    const path = join(dir, 'gateway.sock')
    server.listen(path)
    await once(server, 'listening')
    const client = connect(path)
    socket = client
    client.on('error', () => {})
    let received = ''
    client.setEncoding('latin1').on('data', (chunk: string) => (received += chunk))
    await once(client, 'connect')
    const post = (model: string, headers: string) => {
      const text = JSON.stringify({
        model,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      })
      return (
        'POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\ncontent-type: application/json\r\n' +
        `content-length: ${Buffer.byteLength(text)}\r\n${headers}\r\n${text}`
      )
    }
    client.write(
      post('s', 'x-request-id: ahead\r\n') +
        post('m', 'x-request-id: behind\r\nx-deadline-remaining-ms: 400\r\n'),
    )
    const until = async (done: () => boolean) => {
      for (let turn = 0; turn < 100_000 && !done(); turn++) {
        await new Promise((resolve) => setImmediate(resolve))
      }
      expect(done()).toBe(true)
    }
    // The one behind is answered whole, and waits for its turn past its deadline.
    await until(() => finishAhead !== undefined && behind[0]?.writableEnded === true)
    clock.advance(1000)
    expect(lines).toHaveLength(0)
    finishAhead?.()
    // Both delivered whole: each `[DONE]`.
    await until(() => lines.length === 2 && received.split('data: [DONE]').length === 3)
    expect(lines.find((line) => line['requestId'] === 'behind')).toMatchObject({
      level: 'info',
      status: 200,
    })
    expect(lines.find((line) => line['requestId'] === 'behind')?.['error']).toBeUndefined()
    const page = await new Promise<string>((resolve, reject) => {
      get({ socketPath: path, path: '/metrics' }, (res) => {
        let text = ''
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk))
        res.on('end', () => resolve(text))
      }).on('error', reject)
    })
    expect(page).toMatch(/hourglass_gateway_requests_total\{status_class="2xx"\} 2/)
    expect(page).not.toMatch(/kind="deadline_exceeded"\} [1-9]/)
  })
})
