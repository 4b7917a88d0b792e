import { relative } from 'node:path'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

/**
 * The files that take longest in the projects whose two workers share a
 * queue (`isolated`, `otel`, `parallel`), longest first: seconds of wall time
 * each on a 2-core machine (a fresh clone's run, December 2026). Globs as in
 * `vitest.config.ts`, relative to the repo root.
 *
 * Why a list: Vitest orders the files it holds no timings for in the order
 * its glob found them, and a fresh clone (CI) holds none, so a 10–20 s file
 * could start last and finish alone while the other worker idled. Started
 * first, the long files run side by side and the hundreds of short ones fill
 * in around them (longest-processing-time-first). A file missing here only
 * runs in glob order; a name that no longer matches a file is caught by
 * `test/spine/testSchedule.test.ts`.
 */
export const LONGEST: readonly string[] = [
  // isolated: each in a fresh process.
  'packages/express/test/leak.test.ts',
  'packages/fetch/test/leak.test.ts',
  'test/bench.test.ts',
  'packages/core/test/leak.test.ts',
  'packages/grpc/test/leak.test.ts',
  'test/security/secrets.test.ts',
  'packages/gateway/test/keys.test.ts',
  // parallel
  'test/fuzz/normalizers.fuzz.test.ts',
  'packages/llm/test/dialects/normalizerFuzz.test.ts',
  'test/cli/gateway.test.ts',
  'test/fuzz/sseDecoder.fuzz.test.ts',
  'packages/gateway/test/hostileBodies.test.ts',
  'test/cli/gatewaySignalWhileLoadingConfig.test.ts',
  'test/docs/readmeSnippets.test.ts',
  'test/examples.test.ts',
  'test/cli/signalDuringStartup.test.ts',
  'packages/bullmq/test/withDeadline.test.ts',
  'test/cli/pipes.test.ts',
  'packages/gateway/test/limits/sharedRedis.test.ts',
  'packages/gateway/test/operators/health.test.ts',
  'packages/gateway/test/operators/earlySignal.test.ts',
  'test/fuzz/readDeadline.fuzz.test.ts',
  'test/cli/gatewayPortDenied.test.ts',
]

/**
 * Vitest's own order (group, then project, then its cached timings when it
 * has them), with the `LONGEST` files moved to the front of their project.
 * Projects stay contiguous: a worker that runs file after file in one
 * process (`isolate: false`) is kept only while the next file in the queue
 * is of its project.
 */
export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files)
    const root = this.ctx.config.root
    const rank = (spec: TestSpecification): number => {
      const at = LONGEST.indexOf(relative(root, spec.moduleId))
      return at === -1 ? LONGEST.length : at
    }
    const position = new Map(sorted.map((spec, i) => [spec, i]))
    const order = (spec: TestSpecification) => spec.project.config.sequence.groupOrder ?? 0
    return sorted.sort(
      (a, b) =>
        order(a) - order(b) ||
        (a.project.name === b.project.name
          ? rank(a) - rank(b) || position.get(a)! - position.get(b)!
          : position.get(a)! - position.get(b)!),
    )
  }
}
