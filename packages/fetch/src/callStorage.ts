import { AsyncLocalStorage } from 'node:async_hooks'
import type { Deadline } from '@hourglass/core'
import type { Attempt } from './Attempt.js'

/** What `createFetch` tells its interceptor about the call in progress (undici's fetch passes no custom options down). */
export interface CallContext {
  deadline: Deadline | undefined
  signal: AbortSignal | undefined
  method: string
  url: string
  number: number
  onAttempt(attempt: Attempt): void
}

export const callStorage = new AsyncLocalStorage<CallContext>()
