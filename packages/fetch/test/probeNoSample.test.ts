import { expect, it } from 'vitest'
import { isProbeNoSample } from '../src/index.js'
import { probeResult } from '../src/probe.js'

// The report read its figures off whatever samples were taken: with none
// (a call the probe could not time: see bodilessContentLength.test.ts for
// the 204 that did so) it threw `TypeError: Cannot read properties of
// undefined (reading 'medianMs')`. Now a typed error that says no sample was
// taken, its URL's query left out as in the package's other messages.

it('a report over no sample is a PROBE_NO_SAMPLE error, not a TypeError', () => {
  let error: unknown
  try {
    probeResult('http://127.0.0.1:8080/health?key=secret', [])
  } catch (e) {
    error = e
  }
  expect(isProbeNoSample(error)).toBe(true)
  expect(error).toMatchObject({ code: 'PROBE_NO_SAMPLE' })
  expect((error as Error).message).toMatch(/no sample was taken/)
  expect((error as Error).message).not.toContain('secret')
})

it('a report over samples is as before', () => {
  const result = probeResult('http://127.0.0.1:8080/', [
    {
      status: 204,
      dnsMs: undefined,
      connectMs: undefined,
      totalMs: 4,
      headersMs: 3,
      bodyMs: 1,
      bodyGapMs: 1,
    },
  ])
  expect(result).toMatchObject({ medianMs: 4, p90Ms: 4, maxMs: 4, ratio: 1 })
  expect(result.phases.headers).toEqual({ medianMs: 3, p90Ms: 3, maxMs: 3, samples: 1 })
})
