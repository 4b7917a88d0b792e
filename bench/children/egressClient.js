// One egress client of the egress benchmark, in a process of its own: the
// variant named in argv[2] is the only client this process ever runs. The
// parent asks for bursts (`{ count }`) and gets back throughput, latency and
// this process's CPU per call.
//
// Why a process per client: run in one process, each client pays for the
// garbage and the polluted inline caches of whichever client ran before it.
// Node's global fetch (a second copy of undici) and undici's fetch leave
// WeakRefs, finalization-registry entries and AbortSignals behind, and the
// client measured next paid for collecting them: up to +6 µs per call on a
// 37 µs call, in a scratch run of the same calls in one process.
import { Deadline, runWithDeadline } from '@hourglass/core'
import { createConnector, createFetch, deadlineInterceptor } from '@hourglass/fetch'
import { Agent, request, fetch as undiciFetch } from 'undici'
import { announceReady } from '../lib/child.js'
import { median, percentile } from '../lib/stats.js'

const [variant, url, concurrencyArg] = process.argv.slice(2)
const concurrency = Number(concurrencyArg)

// A service has the one context enabled (its ingress middleware runs every
// request in it): so does every client here, alike. On Node 20 that adds
// work to every promise of the process.
runWithDeadline(Deadline.never(), () => {})

/** `undici.request` through `dispatcher` with a `Deadline.after(5000)` created, passed and disposed per call. */
const requestWithDeadline = (dispatcher) => async () => {
  const deadline = Deadline.after(5000)
  try {
    const res = await request(url, { dispatcher, deadline })
    await res.body.text()
  } finally {
    deadline.dispose()
  }
}

/** Each variant: its dispatcher (closed at the end) and one call. */
function makeClient(name) {
  // Each client gets its own pool of keep-alive connections of the same size;
  // ours adds our connector (it bounds DNS and connect).
  const agent = new Agent({
    connections: concurrency,
    ...(name === 'interceptor' ? { connect: createConnector() } : {}),
  })
  switch (name) {
    case 'undici.request':
      return {
        close: () => agent.close(),
        call: async () => {
          const res = await request(url, { dispatcher: agent })
          await res.body.text()
        },
      }
    // What a careful hand-written client does: an AbortController and a timer per call.
    case 'naive':
      return {
        close: () => agent.close(),
        call: async () => {
          const controller = new AbortController()
          const timer = setTimeout(() => controller.abort(), 5000)
          try {
            const res = await request(url, { dispatcher: agent, signal: controller.signal })
            await res.body.text()
          } finally {
            clearTimeout(timer)
          }
        },
      }
    case 'global fetch':
      return {
        close: () => agent.close(),
        call: async () => {
          const res = await fetch(url)
          await res.text()
        },
      }
    case 'undici.fetch':
      return {
        close: () => agent.close(),
        call: async () => {
          const res = await undiciFetch(url, { dispatcher: agent })
          await res.text()
        },
      }
    // The least any fetch that can stop a body it has handed out does with
    // undici's fetch: give it a signal (a fresh AbortController per call).
    case 'undici.fetch + signal':
      return {
        close: () => agent.close(),
        call: async () => {
          const controller = new AbortController()
          const res = await undiciFetch(url, { dispatcher: agent, signal: controller.signal })
          await res.text()
        },
      }
    // What a service does per outbound call: a deadline, the call, the body, dispose.
    case 'createFetch': {
      const hourglass = createFetch({ dispatcher: agent })
      return {
        close: () => hourglass.close(),
        call: async () => {
          const deadline = Deadline.after(5000)
          try {
            const res = await hourglass(url, { deadline })
            await res.text()
          } finally {
            deadline.dispose()
          }
        },
      }
    }
    // The same, for code that stays on undici.request: our interceptor and connector.
    case 'interceptor':
      return {
        close: () => agent.close(),
        call: requestWithDeadline(agent.compose(deadlineInterceptor())),
      }
    // The floor for any interceptor given the caller's deadline: the same
    // deadline per call, an interceptor that does nothing with it.
    case 'empty interceptor':
      return {
        close: () => agent.close(),
        call: requestWithDeadline(
          agent.compose((dispatch) => (opts, handler) => dispatch(opts, handler)),
        ),
      }
    default:
      throw new Error(`unknown egress variant ${name}`)
  }
}

const client = makeClient(variant)

/** `count` calls, `concurrency` at a time. */
async function burst(count) {
  const latencies = []
  let next = 0
  const worker = async () => {
    while (next < count) {
      next++
      const t = performance.now()
      await client.call()
      latencies.push(performance.now() - t)
    }
  }
  const t0 = performance.now()
  const cpu0 = process.cpuUsage()
  await Promise.all(Array.from({ length: concurrency }, worker))
  const cpu = process.cpuUsage(cpu0)
  const seconds = (performance.now() - t0) / 1000
  return {
    rps: count / seconds,
    p99: percentile(latencies, 0.99),
    p50: median(latencies),
    // This process's CPU (user + system, µs) per call: the client's own cost,
    // which the server sharing the 2 cores does not blur.
    cpuPerCall: (cpu.user + cpu.system) / count,
  }
}

process.on('message', async (message) => {
  if (message?.close) {
    await client.close()
    process.send({ id: message.id, reply: true })
    return
  }
  const reply = await burst(message.count)
  process.send({ id: message.id, reply })
})
announceReady({ variant })
