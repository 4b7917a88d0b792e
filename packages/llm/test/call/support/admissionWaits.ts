import diagnostics from 'node:diagnostics_channel'
import { afterEach } from 'vitest'
import { type LlmAdmissionMessage, llmChannels } from '../../../src/channels.js'

/**
 * Registers an `afterEach` that unsubscribes what the returned function
 * subscribed, and returns that function: it resolves when admission next
 * starts waiting for a cooldown (its timer is set by then). Call it once, at
 * a test file's top level.
 */
export function useAdmissionWaits(): () => Promise<LlmAdmissionMessage> {
  let listener: ((message: unknown) => void) | undefined
  afterEach(() => {
    if (listener) diagnostics.unsubscribe(llmChannels.admission.name, listener)
    listener = undefined
  })
  return () =>
    new Promise((resolve) => {
      listener = (message) => {
        if ((message as LlmAdmissionMessage).action === 'wait')
          resolve(message as LlmAdmissionMessage)
      }
      diagnostics.subscribe(llmChannels.admission.name, listener)
    })
}
