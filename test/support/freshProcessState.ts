/**
 * Runs before every test file of the `parallel` and `timing` projects, whose
 * workers run file after file in one process (`isolate: false`). Puts back what Hourglass
 * keeps per process, as a new process would have it, so no file inherits
 * another's: the timer lateness that sets the adaptive reserve (a fuzz file
 * that held the loop for seconds would give the next file's servers a 100 ms
 * reserve), and the default admission and retry budgets that every
 * `callModel` without its own shares (cooldowns, spent retry tokens).
 */
import { resetTimerLateness } from '@hourglass/core'
import { afterAll, vi } from 'vitest'
// The two llm modules that hold these, not the package's index: the setup
// file runs again before every file of a shared worker, and importing the
// whole of @hourglass/llm from it cost ~150 ms of setup per file (measured:
// 94 core files, setup 24 s summed against 6 s this way), though the package
// is loaded once per worker. Same source files, so the same module instances
// a test's `import '@hourglass/llm'` gets.
import { setDefaultAdmission } from '../../packages/llm/src/admission/defaultAdmission.js'
import { setDefaultRetryBudgets } from '../../packages/llm/src/retry/defaultRetryBudgets.js'

resetTimerLateness()
setDefaultAdmission(undefined)
setDefaultRetryBudgets(undefined)

/**
 * A file that subscribes to an Hourglass channel unsubscribes before it ends:
 * in a shared worker its listener would otherwise stay for every later file,
 * holding what it records (messages, and the deadlines they reach) and making
 * every later publish build its message. Checked after each file, over every
 * channel group registered with core (`defineChannels`): a channel nobody
 * listened to when the file started has no listener when it ends.
 */
function listenedChannels(): Set<string> {
  const registry = (globalThis as Record<symbol, unknown>)[
    Symbol.for('@hourglass/core.channelGroups.v1')
  ] as
    | { groups: Map<string, Record<string, { name: string; hasSubscribers: boolean }>> }
    | undefined
  const names = new Set<string>()
  for (const channels of registry?.groups.values() ?? []) {
    for (const channel of Object.values(channels)) {
      if (channel.hasSubscribers) names.add(channel.name)
    }
  }
  return names
}

const listenedBefore = listenedChannels()
afterAll(() => {
  // A spy left on process.nextTick would serve every later file of this worker,
  // Vitest's own calls included, and keep every callback it was given.
  if (vi.isMockFunction(process.nextTick)) {
    throw new Error('process.nextTick is still a mock: restore it before the test returns')
  }
  const left = [...listenedChannels()].filter((name) => !listenedBefore.has(name))
  if (left.length > 0) {
    throw new Error(
      `this file left a listener on ${left.join(', ')}: unsubscribe it before the file ends`,
    )
  }
})
