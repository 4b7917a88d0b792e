import { BaseSequencer, type TestSpecification } from 'vitest/node'

/**
 * Vitest's own order, with the files of `first` moved to the front of their
 * project. A fresh clone has no recorded durations, so Vitest starts the
 * largest files first; a small file that runs long (the type check: a few
 * lines that wait ~20 s for `tsc`) would otherwise start last and leave the
 * phase waiting on it alone.
 */
export function longPolesFirst(first: readonly string[]): typeof BaseSequencer {
  const isFirst = (spec: TestSpecification) =>
    first.some((suffix) => spec.moduleId.endsWith(suffix))
  return class LongPolesFirst extends BaseSequencer {
    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      const sorted = await super.sort(files)
      const out: TestSpecification[] = []
      for (const spec of sorted) {
        const front = isFirst(spec)
          ? out.findIndex((o) => o.project.name === spec.project.name && !isFirst(o))
          : -1
        if (front === -1) out.push(spec)
        else out.splice(front, 0, spec)
      }
      return out
    }
  }
}
