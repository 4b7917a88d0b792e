import { setTimeout as sleep } from 'node:timers/promises'
import { Deadline } from '@hourglass/core'
import { expect, it } from 'vitest'

// A deadline's signal is handed to Node's own calls, several at once under
// one slice (`Promise.all(files.map((f) => readFile(f, { signal })))`):
// each listens while it runs. At Node 20's and 22's default cap of 10, the
// tenth under a `plan.run` step (which listens itself) printed
// "MaxListenersExceededWarning: Possible EventTarget memory leak detected".
it('a slice signal takes a fan-out of a dozen calls without a leak warning', async () => {
  const warnings: Error[] = []
  const onWarning = (warning: Error) => warnings.push(warning)
  process.on('warning', onWarning)
  try {
    const plan = Deadline.after(5000).plan({ read: 1 })
    await plan.run('read', (signal) =>
      Promise.all(Array.from({ length: 12 }, (_, i) => sleep(1, i, { signal }))),
    )
    await new Promise((resolve) => setImmediate(resolve))
  } finally {
    process.off('warning', onWarning)
  }
  expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([])
})
