// Counts the AsyncLocalStorage instances created while every Hourglass
// package is loaded (the built dist) and used once, and says which file
// created each. Run in its own process: nothing else may have created one.
import asyncHooks from 'node:async_hooks'
import { syncBuiltinESMExports } from 'node:module'

const Original = asyncHooks.AsyncLocalStorage
const created = []
class CountingStorage extends Original {
  constructor(...args) {
    super(...args)
    const stack = new Error().stack.split('\n').slice(2)
    const site = stack.find((line) => !line.includes('node:')) ?? stack[0] ?? ''
    created.push(site.trim())
  }
}
// Defined, not assigned: from Node 22 the export is a getter-only accessor
// (it picks the AsyncContextFrame or async_hooks implementation lazily), so
// an assignment throws in ESM strict mode. On Node 20 it is a plain data
// property and defineProperty replaces it just as the assignment did.
Object.defineProperty(asyncHooks, 'AsyncLocalStorage', {
  value: CountingStorage,
  writable: true,
  enumerable: true,
  configurable: true,
})
syncBuiltinESMExports()

const packages = (process.argv[2] ?? '').split(',').filter(Boolean)
for (const name of packages) await import(`@hourglass/${name}`)
// Use the spine once: a deadline in context, an outbound attempt.
const core = await import('@hourglass/core')
const deadline = core.Deadline.after(1000)
core.runWithDeadline(deadline, () => core.currentDeadline())
deadline.dispose()
const ours = created.filter((site) => site.includes('/packages/'))
console.log(JSON.stringify({ total: created.length, ours }))
