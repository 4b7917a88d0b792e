import { afterAll, afterEach, vi } from 'vitest'
import {
  forgetStartupSignals,
  holdStartupSignals,
  releaseStartupSignals,
} from '../../src/startupSignals.js'

/**
 * This file's signals handled as the binary handles them (it holds them
 * from its first line, then releases them without redelivery), forgotten
 * after it: the next files in this worker run main() as a library, not the
 * binary. Every mock (the stubbed `process.exit`, `process.kill`) is
 * restored after each test.
 */
export function signalsAsBinary(): void {
  holdStartupSignals()
  releaseStartupSignals({ redeliver: false })
  afterAll(forgetStartupSignals)
  afterEach(() => {
    vi.restoreAllMocks()
  })
}
