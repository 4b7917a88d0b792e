import { ManualClock } from '@hourglass/core'
import { faultServer } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { Attempt } from '../src/Attempt.js'
import { type ProbeResult, type ProbeSample, probe, suggestTimeouts } from '../src/index.js'

// `bodyTimeoutMs` is the longest silence between two body chunks, but
// suggestTimeouts sized it from the whole body's length: a steady stream of
// 8 s with a chunk every 50 ms got a bodyTimeoutMs of 16 s, and under a 5 s
// budget a warning that it would cut every sample. probe now records each
// sample's longest gap between chunks (`bodyGapMs`, `phases.bodyGap`) and
// suggestTimeouts sizes bodyTimeoutMs from that. The gaps themselves are
// measured on a ManualClock; the one real probe asserts no millisecond.

function measuredAttempt(clock: ManualClock): Attempt {
  return new Attempt({
    deadline: undefined,
    signal: undefined,
    limits: { dnsTimeoutMs: 0, connectTimeoutMs: 0, headersTimeoutMs: 0, bodyTimeoutMs: 0 },
    clock,
    method: 'GET',
    url: 'http://x/',
    number: 1,
    measureGaps: true,
  })
}

describe('the longest gap between body chunks', () => {
  it('is the longest silence of the body, not its length', () => {
    const clock = new ManualClock()
    const attempt = measuredAttempt(clock)
    attempt.enter('headers')
    clock.advance(300)
    attempt.enter('body')
    for (let i = 0; i < 10; i++) {
      clock.advance(i === 4 ? 80 : 50) // one chunk late
      attempt.chunk(100)
    }
    clock.advance(5)
    attempt.finish()
    expect(attempt.timings.bodyMs).toBe(535)
    expect(attempt.timings.bodyGapMs).toBe(80)
  })

  it('counts headers → first chunk and last chunk → end, and leaves out the time the reader paused', () => {
    const clock = new ManualClock()
    const first = measuredAttempt(clock)
    first.enter('body')
    clock.advance(120)
    first.chunk(1)
    clock.advance(10)
    first.chunk(1)
    first.finish()
    expect(first.timings.bodyGapMs).toBe(120)

    const last = measuredAttempt(clock)
    last.enter('body')
    last.chunk(1)
    clock.advance(90)
    last.finish()
    expect(last.timings.bodyGapMs).toBe(90)

    const paused = measuredAttempt(clock)
    paused.enter('body')
    clock.advance(30)
    paused.chunk(1)
    clock.advance(20)
    paused.pauseBody(true) // the reader stopped pulling: not the server's silence
    clock.advance(5000)
    paused.pauseBody(false)
    clock.advance(40)
    paused.chunk(1)
    paused.finish()
    expect(paused.timings.bodyGapMs).toBe(40)
  })

  it('probe reports it for every sample, beside the whole body time', async () => {
    const server = await faultServer({ type: 'stream', chunks: 4, intervalMs: 10 })
    try {
      const result = await probe(server.url, { warmup: 0, samples: 2 })
      for (const sample of result.samples) {
        expect(sample.bodyGapMs).toBeTypeOf('number')
        expect(sample.bodyGapMs).toBeLessThanOrEqual(sample.bodyMs!)
      }
      expect(result.phases.bodyGap?.samples).toBe(2)
      expect(result.phases.body.samples).toBe(2)
    } finally {
      await server.close()
    }
  })
})

describe('suggestTimeouts sizes bodyTimeoutMs from the gaps', () => {
  /** A steady stream: headers in 300 ms, then a chunk every 50 ms for 8 s. */
  const stream = (): ProbeResult => {
    const samples: ProbeSample[] = Array.from({ length: 10 }, () => ({
      dnsMs: undefined,
      connectMs: 1,
      headersMs: 300,
      bodyMs: 8000,
      bodyGapMs: 50,
      totalMs: 8301,
      status: 200,
    }))
    const stat = (ms: number) => ({ medianMs: ms, p90Ms: ms, maxMs: ms, samples: 10 })
    return {
      url: 'http://x',
      samples,
      medianMs: 8301,
      p90Ms: 8301,
      maxMs: 8301,
      ratio: 1,
      phases: {
        dns: undefined,
        connect: stat(1),
        headers: stat(300),
        body: stat(8000),
        bodyGap: stat(50),
      },
      warning: undefined,
    }
  }

  it('an 8 s stream with a chunk every 50 ms gets 100 ms, not 16 s', () => {
    expect(suggestTimeouts(stream(), 30_000).bodyTimeoutMs).toBe(100)
  })

  it('warns of no body cut when the budget is shorter than the stream (only the slice is cut)', () => {
    const s = suggestTimeouts(stream(), 5000)
    expect(s.bodyTimeoutMs).toBe(100)
    expect(s.cuts.map((c) => c.setting)).toEqual(['sliceMs'])
    expect(s.warnings.filter((w) => w.includes('bodyTimeoutMs'))).toEqual([])
  })

  it('never suggests 0, which each setting reads as no limit: a budget of 0 or NaN is refused, a floorMs of 0 gives 1 ms', () => {
    // A budget of 0 suggested 0 for every phase (all unbounded); NaN suggested NaN (null in JSON).
    expect(() => suggestTimeouts(stream(), 0)).toThrow(
      new RangeError('budgetMs must be a finite number > 0 (ms), got 0'),
    )
    expect(() => suggestTimeouts(stream(), Number.NaN)).toThrow(RangeError)
    expect(() => suggestTimeouts(stream(), '500' as unknown as number)).toThrow(TypeError)
    const instant = stream()
    instant.phases.connect = { medianMs: 0, p90Ms: 0, maxMs: 0, samples: 10 }
    expect(suggestTimeouts(instant, 30_000, { floorMs: 0 }).connectTimeoutMs).toBe(1)
  })

  it('names the p90 as the probe warning does, to a tenth of a ms (302.5 in both, not 303 here)', () => {
    const result = stream()
    result.p90Ms = 302.5
    result.warning =
      'p90 (302.5 ms) is 3× the median (100 ms): a fixed timeout here is a lottery; budget for the tail or fix it'
    const s = suggestTimeouts(result, 200)
    expect(s.warnings[1]).toMatch(/^p90 \(302\.5 ms\) exceeds the 200 ms budget/)
  })

  it('a gap the budget caps is reported as a cut of the gaps', () => {
    const result = stream()
    result.samples[0] = { ...result.samples[0]!, bodyGapMs: 900 }
    result.phases.bodyGap = { medianMs: 50, p90Ms: 50, maxMs: 900, samples: 10 }
    const s = suggestTimeouts(result, 800)
    expect(s.bodyTimeoutMs).toBe(800)
    expect(s.cuts.find((c) => c.setting === 'bodyTimeoutMs')).toMatchObject({
      samples: 1,
      of: 10,
      fromMs: 900,
      toMs: 900,
    })
  })
})
