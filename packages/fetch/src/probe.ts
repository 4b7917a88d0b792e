import { setImmediate } from 'node:timers'
import { Deadline, describeValue, optionError, refuseUnknownOptions } from '@hourglass/core'
import type { Attempt, AttemptTimings } from './Attempt.js'
import { type CreateFetchOptions, createFetch } from './createFetch.js'
import { ProbeNoSampleError } from './errors/ProbeNoSampleError.js'
import { ProbeRedirectError } from './errors/ProbeRedirectError.js'
import { FETCH_OPTION_NAMES } from './options.js'

export interface ProbeOptions extends Omit<CreateFetchOptions, 'retry' | 'dispatcher'> {
  /** Calls made first and not measured (JIT, caches, TLS sessions). Default 3. */
  warmup?: number
  /** Calls measured. Default 10. */
  samples?: number
  method?: string
  /**
   * Sent on every call, warm-up included (an `Authorization` for a protected
   * endpoint): a record, or `[name, value]` pairs — an array of them, or
   * any iterable of them, as fetch takes (a `Headers`, a `Map`). Pairs may
   * repeat a name.
   */
  headers?: Record<string, string> | Iterable<readonly [string, string]>
  body?: string
  /**
   * Open a new connection for every call, so DNS and connect are measured
   * too. Default `true` (`null` too); `false` measures keep-alive calls
   * (the warm-up calls open the connection).
   */
  freshConnections?: boolean
  /**
   * The most one call may take, in ms — from dispatch to its body's last
   * byte, warm-up calls included. A call still running then is abandoned
   * and the probe rejects with core's `DeadlineExceededError`. With it, the
   * phase limits (`dnsTimeoutMs`, `connectTimeoutMs`, `headersTimeoutMs`,
   * `bodyTimeoutMs`) are off unless given, so a slow phase is measured, not
   * cut by fetch's defaults. Default: none (the phase limits alone bound a
   * call: 10 s for the headers, then 10 s between body chunks). No
   * `x-deadline-remaining-ms` is sent for it: the probed endpoint is timed as
   * its callers reach it today.
   */
  callTimeoutMs?: number
  /**
   * Called as each of this probe's calls ends, warm-up included, once its
   * answer has been read and before the next is made: `done` calls of
   * `total` (warm-up + samples), `warmup` while it is one of those. Its own
   * calls only — the `attempt-end` diagnostics event is every fetch's in the
   * process, another probe's or the app's, and a progress counted from it
   * ran ahead. Not for a call that fails: the probe rejects with its error
   * (and with the callback's own, should it throw).
   */
  onProgress?: (progress: { done: number; total: number; warmup: boolean }) => void
}

/** probe's own options, then the fetch options it passes on (not `retry`: its calls make none; not `dispatcher`: it opens fresh connections). */
const PROBE_OPTION_NAMES: readonly string[] = [
  'warmup',
  'samples',
  'method',
  'headers',
  'body',
  'freshConnections',
  'callTimeoutMs',
  'onProgress',
  ...FETCH_OPTION_NAMES.filter((name) => name !== 'retry' && name !== 'dispatcher'),
]

/** `0` = no limit of the phase's own: the call's bound (`callTimeoutMs`) is the limit. */
const NO_PHASE_LIMITS = {
  dnsTimeoutMs: 0,
  connectTimeoutMs: 0,
  headersTimeoutMs: 0,
  bodyTimeoutMs: 0,
} as const

/** Under `callTimeoutMs`: each phase limit given, else (`undefined` or `null`, its default) none. */
function phaseLimitsUnderBound(given: Partial<Record<keyof typeof NO_PHASE_LIMITS, unknown>>) {
  return {
    dnsTimeoutMs: given.dnsTimeoutMs ?? NO_PHASE_LIMITS.dnsTimeoutMs,
    connectTimeoutMs: given.connectTimeoutMs ?? NO_PHASE_LIMITS.connectTimeoutMs,
    headersTimeoutMs: given.headersTimeoutMs ?? NO_PHASE_LIMITS.headersTimeoutMs,
    bodyTimeoutMs: given.bodyTimeoutMs ?? NO_PHASE_LIMITS.bodyTimeoutMs,
  } as typeof NO_PHASE_LIMITS
}

export interface PhaseStats {
  medianMs: number
  p90Ms: number
  /** The slowest sample. */
  maxMs: number
  /** How many samples went through this phase. */
  samples: number
}

export interface ProbeSample extends AttemptTimings {
  status: number
}

export interface ProbeResult {
  url: string
  samples: ProbeSample[]
  /** Total time of one call (dispatch → last body byte). */
  medianMs: number
  p90Ms: number
  /** The slowest call. */
  maxMs: number
  /** p90 / median. */
  ratio: number
  /**
   * Per phase. `dns` is undefined when no sample looked a name up (an IP
   * address, or keep-alive calls), `connect` when none opened a connection:
   * there is nothing to size a limit from.
   */
  phases: {
    dns: PhaseStats | undefined
    connect: PhaseStats | undefined
    headers: PhaseStats
    /** Headers → last body byte: the whole body. */
    body: PhaseStats
    /**
     * The longest silence between body chunks in each sample (headers →
     * first chunk, chunk → chunk, last chunk → end): what `bodyTimeoutMs`
     * limits, and what `suggestTimeouts` sizes it from. A stream that sends a
     * chunk every 50 ms for 8 s has a `body` of 8 s and a `bodyGap` of 50 ms.
     * Always set by `probe`; optional for a result built by hand.
     */
    bodyGap?: PhaseStats | undefined
  }
  /** Set when p90 ≥ 3 × median: a fixed timeout would be a lottery. */
  warning: string | undefined
}

/**
 * Warm an endpoint, then time `samples` sequential calls and report median,
 * p90, maximum, their ratio and per-phase timings — the data to size slices
 * from (DESIGN.md: "a probe warms an endpoint (3 calls), measures 10").
 * Percentiles are nearest-rank. Calls run without retries; the first that
 * fails rejects the probe with its error (a `DnsError` for a name that does
 * not resolve); a URL that redirects is refused with a `ProbeRedirectError`
 * (probe the one it redirects to).
 */
export async function probe(url: string | URL, options: ProbeOptions = {}): Promise<ProbeResult> {
  refuseUnknownOptions(options, PROBE_OPTION_NAMES, 'probe()')
  const {
    warmup: givenWarmup,
    samples: givenSamples,
    method,
    headers,
    body,
    freshConnections: givenFresh,
    callTimeoutMs: givenCallTimeoutMs,
    onProgress: givenOnProgress,
    ...fetchOwn
  } = options
  // `null` is a number's default, as for fetch's own options (and every
  // ingress's): a destructuring default is for `undefined` alone.
  const warmup = givenWarmup ?? 3
  // A boolean: 'false' from an environment variable measured fresh
  // connections, the opposite of what was asked, and `null` keep-alive ones.
  const freshConnections = givenFresh ?? true
  if (typeof freshConnections !== 'boolean') {
    throw new TypeError(`freshConnections must be true or false, got ${describeValue(givenFresh)}`)
  }
  const samples = givenSamples ?? 10
  const callTimeoutMs = givenCallTimeoutMs ?? undefined
  if (!Number.isInteger(samples) || samples < 1)
    throw optionError('samples', 'an integer ≥ 1', samples)
  if (!Number.isInteger(warmup) || warmup < 0) throw optionError('warmup', 'an integer ≥ 0', warmup)
  if (
    callTimeoutMs !== undefined &&
    (typeof callTimeoutMs !== 'number' || !Number.isFinite(callTimeoutMs) || callTimeoutMs <= 0)
  ) {
    throw optionError('callTimeoutMs', 'a finite number > 0 (ms)', callTimeoutMs)
  }
  const onProgress = givenOnProgress ?? undefined
  if (onProgress !== undefined && typeof onProgress !== 'function') {
    throw optionError('onProgress', 'a function', onProgress)
  }
  const scheme = schemeOf(url)
  if (scheme === 'data:' || scheme === 'blob:') {
    // fetch answers these itself, with no request: no attempt, nothing to
    // time. Every call "succeeded" and the figures were read off no
    // samples: "Cannot read properties of undefined (reading 'medianMs')".
    // A scheme fetch refuses (`ftp:`) is left to it (`UrlRefusedError`).
    throw new TypeError(
      `probe: a ${scheme} URL is not a request over the network, there is nothing to time: probe an http: or https: URL`,
    )
  }
  const init = {
    redirect: 'manual' as const,
    ...(method ? { method } : {}),
    ...(headers ? { headers: toHeaderList(headers) } : {}),
    ...(body !== undefined ? { body } : {}),
  }
  const measured: ProbeSample[] = []
  // The attempt of the call in flight (one hook, whichever fetch made the
  // call); its timings are read once it has ended.
  let attempt: Attempt | undefined
  const onAttempt = (a: Attempt) => {
    attempt = a
  }
  // Under callTimeoutMs the phases get no limits of their own unless given:
  // fetch's defaults (1 s DNS, 3 s connect, 10 s headers) would cut a call
  // the bound still allows — a probe for a 5 s budget failed at 10 s with
  // "no response headers", and a 1.5 s DNS lookup it exists to measure
  // failed at 1 s.
  const fetchOptions = {
    ...fetchOwn,
    ...(callTimeoutMs === undefined ? {} : phaseLimitsUnderBound(fetchOwn)),
    retry: false as const,
  }
  const shared = freshConnections ? undefined : createFetch(fetchOptions, { onAttempt })
  try {
    for (let i = 0; i < warmup + samples; i++) {
      attempt = undefined
      const fetch = shared ?? createFetch(fetchOptions, { onAttempt })
      // A signal, not the call's deadline: a deadline would be sent to the
      // endpoint as x-deadline-remaining-ms and change what is measured.
      const bound =
        callTimeoutMs === undefined
          ? undefined
          : Deadline.after(callTimeoutMs, options.clock ? { clock: options.clock } : {})
      try {
        const res = await fetch(url, bound ? { ...init, signal: bound.signal } : init)
        // Not followed (`redirect: 'manual'`): a redirect is refused before its
        // target is called. A 3xx without a Location is the endpoint's answer.
        // The first Location header, as the attempt read it (the other paths
        // show that one): `Headers` joins several with ", ", and the joined
        // text parsed as one URL with the second header in its path, its
        // credentials and all.
        const location = REDIRECTS.has(res.status)
          ? ((attempt as Attempt | undefined)?.location ?? res.headers.get('location'))
          : null
        if (location !== null) {
          await res.body?.cancel()
          throw new ProbeRedirectError(String(url), res.status, resolveLocation(location, url))
        }
        // Read to its end, each chunk let go: the timings are the call's, not
        // the bytes'. Read whole (`arrayBuffer()`), a 300 MB body held ~1 GB
        // of RSS, and one past memory (or 4 GiB) ended the probe.
        if (res.body !== null) for await (const _ of res.body) void _
        const done = await ended(attempt as Attempt | undefined, url)
        if (i >= warmup) measured.push({ ...done.timings, status: res.status })
        onProgress?.({ done: i + 1, total: warmup + samples, warmup: i < warmup })
      } catch (error) {
        // Cut by callTimeoutMs: the rejection says in which phase (`phase`,
        // as fetch's own errors do). Without it a firewall dropping SYNs, a
        // server that never answers and a stalled body were one message.
        // Only the bound's own reason: a caller's deadline that ended the
        // call first is its error, shared with whatever else waits on it.
        const cutAttempt = attempt as Attempt | undefined
        if (bound !== undefined && error === bound.reason && cutAttempt !== undefined) {
          const phase = cutPhase(cutAttempt.timings)
          if (phase !== undefined) {
            Object.defineProperty(error, 'phase', { value: phase, configurable: true })
          }
        }
        throw error
      } finally {
        bound?.dispose()
        if (!shared) await fetch.close()
      }
      // undici puts a kept-alive connection back in its pool a turn after
      // the body's end has been read: the next call made at once opened a
      // second connection, and with `warmup: 1` the first sample timed a
      // lookup and a connect (`phases.connect` set, a connect timeout
      // suggested for a keep-alive probe). Node's own setImmediate: an app's
      // fake timers replace the global one.
      if (shared) await new Promise<void>((resolve) => setImmediate(resolve))
    }
  } finally {
    await shared?.close()
  }
  return probeResult(url, measured)
}

/**
 * The report over the samples taken. None is refused with a typed error
 * (every measured call gives a sample or rejects, see ended()): the figures
 * were read off none — a `TypeError` reading `medianMs` of undefined.
 */
export function probeResult(url: string | URL, measured: ProbeSample[]): ProbeResult {
  if (measured.length === 0) throw new ProbeNoSampleError(String(url))
  const total = stats(measured.map((s) => s.totalMs ?? 0))!
  const ratio = total.medianMs > 0 ? total.p90Ms / total.medianMs : 1
  return {
    url: String(url),
    samples: measured,
    medianMs: total.medianMs,
    p90Ms: total.p90Ms,
    maxMs: total.maxMs,
    ratio,
    phases: {
      dns: stats(measured.map((s) => s.dnsMs)),
      connect: stats(measured.map((s) => s.connectMs)),
      headers: stats(measured.map((s) => s.headersMs ?? 0))!,
      body: stats(measured.map((s) => s.bodyMs ?? 0))!,
      bodyGap: stats(measured.map((s) => s.bodyGapMs ?? 0)),
    },
    warning:
      ratio >= 3
        ? `p90 (${round(total.p90Ms)} ms) is ${round(ratio)}× the median (${round(total.medianMs)} ms): a fixed timeout here is a lottery; budget for the tail or fix it`
        : undefined,
  }
}

/**
 * The call's attempt once it has ended. fetch hands out an answer of a
 * null-body status (204, 205, 304) with no body to read, while undici may
 * still be reading what the server sent with it (a 205 with a
 * `Content-Length`): the read was over before the attempt, whose timings
 * were read unfinished — or not at all, and the figures were read off zero
 * samples ("Cannot read properties of undefined (reading 'medianMs')").
 * An attempt that ended failed is the call's failure (the probe rejects
 * with it, as with any call's).
 */
async function ended(attempt: Attempt | undefined, url: string | URL): Promise<Attempt> {
  if (attempt === undefined) throw new ProbeNoSampleError(String(url))
  if (!attempt.done) await new Promise<void>((resolve) => attempt.onFinish(() => resolve()))
  if (attempt.error !== undefined) throw attempt.error
  return attempt
}

/**
 * The phase an attempt was in when it was cut: the last one it timed
 * (`finish()` closes the timing of the phase in progress).
 */
function cutPhase(t: AttemptTimings): 'dns' | 'connect' | 'headers' | 'body' | undefined {
  if (t.bodyMs !== undefined) return 'body'
  if (t.headersMs !== undefined) return 'headers'
  if (t.connectMs !== undefined) return 'connect'
  if (t.dnsMs !== undefined) return 'dns'
  return undefined
}

/** Stats over the samples that went through a phase; undefined when none did. */
function stats(values: readonly (number | undefined)[]): PhaseStats | undefined {
  const seen = values.filter((v): v is number => v !== undefined)
  if (seen.length === 0) return undefined
  return {
    medianMs: percentile(seen, 0.5),
    p90Ms: percentile(seen, 0.9),
    maxMs: Math.max(...seen),
    samples: seen.length,
  }
}

/** The URL's scheme (`https:`), or undefined when it does not parse (fetch then refuses it, naming it). */
function schemeOf(url: string | URL): string | undefined {
  try {
    return new URL(String(url)).protocol
  } catch {
    return undefined
  }
}

/**
 * The headers as a list of pairs, made once for every call. Any iterable is
 * pairs, as fetch reads it: a `Headers` or a `Map` read as a record has no
 * entries (nothing was sent: the probe timed the endpoint's 401), and a
 * string spread its characters into headers named `0`, `1`, …
 */
function toHeaderList(headers: NonNullable<ProbeOptions['headers']>): [string, string][] {
  if (typeof headers !== 'object') {
    throw new TypeError(
      `headers must be a record of header values or [name, value] pairs, got ${describeValue(headers)}`,
    )
  }
  // Each pair as given: fetch refuses one that is no pair (a flat
  // `[name, value, …]` array), as it would refuse it without the probe.
  return Symbol.iterator in headers
    ? Array.from(headers as Iterable<[string, string]>)
    : Object.entries(headers)
}

/** Nearest-rank percentile. */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}

function round(n: number): number {
  return Math.round(n * 10) / 10
}

const REDIRECTS = new Set([301, 302, 303, 307, 308])

function resolveLocation(location: string, base: string | URL): string {
  try {
    return new URL(location, base).href
  } catch {
    return location
  }
}
