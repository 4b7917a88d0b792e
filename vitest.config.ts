import { defineConfig } from 'vitest/config'
import { longPolesFirst } from './test/support/longPolesFirst.js'

// Tests resolve every @hourglass/* package to its TypeScript source through the
// "@hourglass/source" export condition, so one copy of each module (and one
// AsyncLocalStorage) is loaded and no build is needed to run a single test.
const conditions = ['@hourglass/source', 'node', 'development|production']

const ALL = ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts', 'examples/**/*.test.ts']

/**
 * Files that measure time (an answer "within N ms", lateness, a stop time)
 * or whose figures a loaded CPU would change. They run
 * in the `timing` project: one file at a time, after every other file has
 * finished, so no other test file shares the two cores with them. A new test
 * that asserts milliseconds is named `*.timing.test.ts` and lands here by
 * that name; the list below holds the older files. See test/README.md.
 */
export const TIMING = [
  '**/*.timing.test.ts',
  // Whole-chain suites: lateness, stop times.
  'test/chaos/**/*.test.ts',
  'test/soak/**/*.test.ts',
  'test/security/ingress.test.ts',
  'test/security/redisDown.test.ts',
  'test/demo.test.ts',
  // Per-package files with millisecond bounds.
  'packages/core/test/Deadline.test.ts',
  'packages/express/test/arrival.test.ts',
  'packages/express/test/timing.test.ts',
  'packages/express/test/clientClosed.test.ts',
  'packages/express/test/streaming.test.ts',
  'packages/express/test/bodyParser.test.ts',
  'packages/fetch/test/phases.test.ts',
  'packages/fetch/test/interceptor.test.ts',
  'packages/fetch/test/probe.test.ts',
  'packages/gateway/test/streaming.test.ts',
  // Must fill loopback's buffers (20 MB) within a 2.5 s budget: alone, not beside a fuzz file.
  'packages/gateway/test/operators/stalledReader.test.ts',
  'packages/llm/test/admission/RedisCooldownStore.test.ts',
  'packages/otel/test/twoHops.test.ts',
]

/**
 * Files that need a worker of their own but measure no time: they set
 * process-wide state a later file in the same worker would inherit
 * (OpenTelemetry's global providers, propagator and context manager, an
 * instrumentation's subscriptions), or they count heap, handles and
 * listeners after a flood, or they load both cores for seconds (the bench
 * smoke run). They run in the `isolated` project, each file in a fresh
 * process, beside `parallel` (one group of four workers on two cores;
 * Vitest starts a group's projects in name order, so these long poles start
 * first), before `timing`. Every other file runs in `parallel`, whose
 * workers each run file after file in one process (`isolate: false`):
 * loading the packages once per worker instead of once per file takes a
 * minute off the suite. As two phases (parallel, then isolated), the suite
 * took ~7 s longer: each phase ended waiting on its last files, with a core
 * idle. OpenTelemetry's files that undo what they start run in `parallel`
 * too: `test/support/freshOtelState.ts` unsets OpenTelemetry's globals
 * before every file there. They had a project of their own beside it, whose
 * four workers each loaded every package again (~2 s of CPU a worker, and
 * the transform requests to serve it): one run of the suite took 286 s
 * against 298–330 s in three runs before, 426 s of CPU against 448 s.
 */
/**
 * Timing files that also set process-wide state (OpenTelemetry's global
 * providers and the instrumentations' patches of node:http), or that need a
 * process no other file has run in: one at a time, each in a fresh process,
 * after every other file.
 */
export const TIMING_FRESH = [
  'packages/otel/test/twoHops.test.ts',
  // Reads the timer lateness after a real 60 ms stall and expects the loop's
  // share alone: a Deadline timer an earlier file of a shared worker left
  // armed fires late during that stall, a true sample of the same reading
  // (a fresh-clone run read 50.7 ms where 0 was due, after a gateway file).
  'packages/core/test/timerLatenessRecentWindow.timing.test.ts',
]

export const ISOLATED = [
  // Checks subscription when a package first loads: nothing may have loaded it before.
  'packages/otel/test/laterPackages.test.ts',
  // instrumentation-http must patch node:http before express loads.
  'packages/otel/test/cutStreamedResponseIsError.test.ts',
  'packages/otel/test/endedServerSpan.test.ts',
  'packages/otel/test/lateAnswerSpan.test.ts',
  'packages/otel/test/refusedRequest.test.ts',
  'packages/otel/test/nodeSdkChain.test.ts',
  'packages/otel/test/propagatorBehindDeadline.test.ts',
  // So must instrumentation-express patch express before it loads.
  'packages/otel/test/expressInstrumentation.test.ts',
  'packages/otel/test/expressHandlerSpanHeld.test.ts',
  // instrumentation-http (and, for the second, instrumentation-express)
  // must patch node:http and express before they load.
  'packages/otel/test/ignoredRequestEvents.test.ts',
  'packages/otel/test/ownSpanUnderExpress.test.ts',
  '**/leak.test.ts',
  // 1,000 requests at once through the chain (test/load): it asserts every
  // answer 200 and whole, no warning, nothing left beyond its baseline, and
  // no time (its 10 s budgets are not the figure; its throughput and latency
  // are printed, not judged). Alone in the serial timing project it cost
  // ~7 s of the suite's tail; here it is a process of its own beside the rest.
  'test/load/**/*.test.ts',
  'test/security/secrets.test.ts',
  'test/bench.test.ts',
  // Replaces core's recordAnswerLateness with vi.mock: in a shared worker the
  // express source is already loaded with the real one, and the mock missed.
  'packages/express/test/pipelinedQueuedExpiry.test.ts',
  'packages/express/test/sliceAnswerNotSampled.test.ts',
]

const shared = {
  pool: 'forks' as const,
  testTimeout: 20_000,
  hookTimeout: 20_000,
  // A file that stubs an env variable or spies on a global and forgets to undo
  // it must not hand that to the next file in a shared worker.
  unstubEnvs: true,
  unstubGlobals: true,
  restoreMocks: true,
  // expect.poll waits on loopback servers, Redis and queues: Vitest's 1 s
  // default is a real-time bound, which four workers on two cores can
  // overrun. A poll that holds at once returns at once; this bounds a wait.
  expect: { poll: { timeout: 10_000 } },
}

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    // The type check (`npm run typecheck`, a test of the `parallel` project)
    // is a small file that runs ~20 s: started first, not last by its size.
    sequence: { sequencer: longPolesFirst(['test/typecheck.test.ts']) },
    projects: [
      {
        extends: true,
        test: {
          ...shared,
          name: 'parallel',
          include: ALL,
          exclude: ['**/node_modules/**', '**/dist/**', ...ISOLATED, ...TIMING],
          // Four files at a time on two cores, each worker reusing its loaded
          // modules: with two, the cores idled ~16 % of this phase while files
          // waited on timers, child processes and sockets (sampled from
          // /proc/stat; ~94 % busy with three, the phase ~13 s shorter); with
          // four, the group ended 165 and 176 s in against 183 s with three
          // (the whole run 258 and 266 s against 277 and 281 s), whatever a
          // fourth worker's own loading of the packages costs. No file here
          // measures time (those are in TIMING).
          maxWorkers: 4,
          isolate: false,
          setupFiles: ['test/support/freshProcessState.ts', 'test/support/freshOtelState.ts'],
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          ...shared,
          name: 'isolated',
          include: ISOLATED,
          exclude: ['**/node_modules/**', '**/dist/**', ...TIMING],
          maxWorkers: 4,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          ...shared,
          name: 'timing',
          include: TIMING,
          exclude: ['**/node_modules/**', '**/dist/**', ...TIMING_FRESH],
          // Alone: one file at a time, after the other projects have finished,
          // in one process (each file starting from the state a new process
          // has, as in `parallel`): forking and loading the packages once per
          // file cost about 25 s of a serial project's time.
          fileParallelism: false,
          maxWorkers: 1,
          isolate: false,
          setupFiles: ['test/support/freshProcessState.ts'],
          sequence: { groupOrder: 2 },
        },
      },
      {
        extends: true,
        test: {
          ...shared,
          name: 'timing-fresh',
          include: TIMING_FRESH,
          exclude: ['**/node_modules/**', '**/dist/**'],
          fileParallelism: false,
          maxWorkers: 1,
          sequence: { groupOrder: 3 },
        },
      },
    ],
  },
})
