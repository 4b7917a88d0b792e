import { describe, expect, it } from 'vitest'
import { runMain } from './runMain.js'

// What a running gateway sends (`Keep-Alive: timeout=65` by default, the
// flag's value when given) is read in test/cli/gateway.test.ts, from the
// gateways it starts anyway: a gateway process costs a second of CPU.

describe('hourglass gateway --keep-alive-timeout-ms', () => {
  it.each(['0', '-5', '500', '999', 'soon', '86400001'])(
    'refuses %s as a usage error',
    async (value) => {
      const run = await runMain(['gateway', '--config', 'x.json', '--keep-alive-timeout-ms', value])
      expect(run.code).toBe(2)
      expect(run.stderr).toMatch(
        /^hourglass gateway: --keep-alive-timeout-ms must be a whole number from 1000 to 86400000, got /,
      )
    },
  )
})
