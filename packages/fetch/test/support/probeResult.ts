import type { ProbeResult } from '../../src/index.js'

/** A probe of ten calls: headers dominate, every phase sampled. No call is made. */
export const probeResult: ProbeResult = {
  url: 'http://x',
  samples: [],
  medianMs: 100,
  p90Ms: 150,
  maxMs: 160,
  ratio: 1.5,
  phases: {
    dns: { medianMs: 1, p90Ms: 2, maxMs: 3, samples: 10 },
    connect: { medianMs: 5, p90Ms: 20, maxMs: 24, samples: 10 },
    headers: { medianMs: 80, p90Ms: 120, maxMs: 130, samples: 10 },
    body: { medianMs: 10, p90Ms: 25, maxMs: 30, samples: 10 },
  },
  warning: undefined,
}
