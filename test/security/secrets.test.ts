import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { instrumentHttpAndUndici, setupOtel } from '../../packages/otel/test/helpers/otel.js'
import { CountingClock } from '../support/CountingClock.js'
import type { Chain } from '../support/chain.js'
import { collectStrings } from '../support/collectStrings.js'
import type { Outcome } from '../support/drive.js'
import { type ProcessWatch, watchProcess } from '../support/processWatch.js'
import { type ChannelLog, recordChannels } from '../support/recordChannels.js'

/**
 * Everything a chaos run emits, scanned for the secrets it carried: the
 * edge's `Authorization` header to the model service and both provider API
 * keys. Places scanned: every response body the client got, every message on
 * every Hourglass diagnostics channel, every OpenTelemetry span (Hourglass's
 * own plus the http and undici instrumentations'), everything written to the
 * console, stdout and stderr, and every error the apps handled (message,
 * stack, causes). Then the 504/502/429 bodies are checked for stacks, file
 * paths and upstream hosts.
 */

const otel = setupOtel()
let stopOtel: StopInstrumentation
let uninstrument: () => void = () => {}
let channels: ChannelLog
let watch: ProcessWatch
let chain: Chain
let outcomes: Outcome[]
let SECRETS: Record<string, string>
let NEVER_RESOLVES: string
const written: string[] = []
const restore: (() => void)[] = []

beforeAll(async () => {
  // Before express and http are loaded: the instrumentations patch them as they are required.
  uninstrument = instrumentHttpAndUndici(otel.tracerProvider)
  stopOtel = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
  channels = recordChannels()

  // Capture every way text can leave the process.
  for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    const original = console[method]
    console[method] = (...args: unknown[]) => {
      written.push(args.map((a) => collectStrings(a).join(' ')).join(' '))
      original.apply(console, args)
    }
    restore.push(() => {
      console[method] = original
    })
  }
  for (const stream of [process.stdout, process.stderr]) {
    const original = stream.write.bind(stream)
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      written.push(String(chunk))
      return (original as (...a: unknown[]) => boolean)(chunk, ...rest)
    }) as typeof stream.write
    restore.push(() => {
      stream.write = original
    })
  }

  const support = await import('../support/chain.js')
  const { drive } = await import('../support/drive.js')
  SECRETS = { ...support.SECRETS }
  NEVER_RESOLVES = support.NEVER_RESOLVES
  watch = watchProcess()
  chain = await support.startChain({ clock: new CountingClock(), watch })
  outcomes = await drive(chain, { requests: 400, concurrency: 16, seed: 20_260_101 })
}, 120_000)

afterAll(async () => {
  for (const undo of restore.splice(0)) undo()
  watch.stop()
  channels.stop()
  stopOtel()
  uninstrument()
  await chain.close()
  await otel.shutdown()
})

/** The secret values, and the distinctive part of each (a key may be cut or re-encoded). */
function leaks(texts: readonly string[]): string[] {
  const needles = Object.values(SECRETS).flatMap((s) => [s, s.replace(/^Bearer /, '').slice(-12)])
  return texts.filter((t) => needles.some((n) => t.includes(n))).map((t) => t.slice(0, 200))
}

describe('secrets never leave the process', () => {
  it('the run really carried the secrets upstream (the scan has something to find)', () => {
    expect(outcomes.length).toBe(400)
    const faultServerSaw = chain.upstream.records.length
    expect(faultServerSaw).toBeGreaterThan(0)
    expect(chain.providerRequests().length).toBeGreaterThan(0)
    // The control: the scanner does find a secret where one is.
    expect(leaks([`authorization: ${SECRETS['edgeToken']}`])).toHaveLength(1)
  })

  it('no API key or Authorization header in any response body', () => {
    expect(leaks(outcomes.map((o) => o.body))).toEqual([])
  })

  it('none in any diagnostics event, on every channel core lists', () => {
    const texts = channels.messages.flatMap((m) => collectStrings(m.message, { skipKeys: ['req'] }))
    console.info(
      `secrets scan: ${channels.messages.length} diagnostics messages on ${new Set(channels.messages.map((m) => m.channel)).size} channels, ${texts.length} strings`,
    )
    expect(channels.messages.length).toBeGreaterThan(1000)
    expect(leaks(texts)).toEqual([])
  })

  it('none in any span name, attribute, event or status', () => {
    const spans = otel.exporter.getFinishedSpans()
    const texts = spans.flatMap((s) => [
      s.name,
      s.status.message ?? '',
      ...collectStrings(s.attributes),
      ...s.events.flatMap((e) => [e.name, ...collectStrings(e.attributes ?? {})]),
    ])
    console.info(`secrets scan: ${spans.length} spans, ${texts.length} strings`)
    expect(spans.length).toBeGreaterThan(400)
    expect(leaks(texts)).toEqual([])
  })

  it('none in anything written to the console, stdout or stderr', () => {
    expect(leaks(written)).toEqual([])
  })

  it('none in any error the apps handled (messages, stacks, causes)', () => {
    const texts = chain.errors.flatMap((e) => collectStrings(e))
    console.info(`secrets scan: ${chain.errors.length} errors, ${texts.length} strings`)
    expect(chain.errors.length).toBeGreaterThan(50)
    expect(leaks(texts)).toEqual([])
  })

  it('504, 502 and 429 bodies reveal no stack, file path or upstream host', () => {
    const hosts = [
      `127.0.0.1:${chain.upstream.port}`,
      `127.0.0.1:${chain.service.port}`,
      NEVER_RESOLVES,
      'localhost',
      'ECONNREFUSED',
      'ECONNRESET',
    ]
    const errorBodies = outcomes.filter((o) => [504, 502, 429].includes(o.status ?? 0))
    const revealing = errorBodies.filter(
      (o) =>
        /\n\s+at |\/work\/|node_modules|\.ts:\d|\.js:\d|Error:/.test(o.body) ||
        hosts.some((h) => o.body.includes(h)),
    )
    console.info(
      `error bodies checked: ${errorBodies.length} (${[504, 502, 429].map((s) => `${s}: ${errorBodies.filter((o) => o.status === s).length}`).join(', ')})`,
    )
    expect(errorBodies.length).toBeGreaterThan(100)
    expect(revealing.map((o) => `${o.status} ${o.body}`)).toEqual([])
    expect(watch.problems()).toEqual([])
  })
})
