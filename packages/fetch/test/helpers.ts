import diagnostics from 'node:diagnostics_channel'
import { once } from 'node:events'
import { createServer, type RequestListener, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type Clock, systemClock, type TimerOptions } from '@hourglass/core'
import { afterEach } from 'vitest'
import {
  type EgressAttemptEndMessage,
  type EgressAttemptMessage,
  type EgressRetryMessage,
  type EgressRetrySkippedMessage,
  fetchChannels,
} from '../src/index.js'

export interface EgressEvents {
  attempts: EgressAttemptMessage[]
  ends: EgressAttemptEndMessage[]
  retries: EgressRetryMessage[]
  skipped: EgressRetrySkippedMessage[]
  stop(): void
}

/** Subscribe to every egress channel for the length of a test. */
export function recordEgress(): EgressEvents {
  const events: EgressEvents = { attempts: [], ends: [], retries: [], skipped: [], stop: () => {} }
  const onAttempt = (m: EgressAttemptMessage) => events.attempts.push(m)
  const onEnd = (m: EgressAttemptEndMessage) => events.ends.push(m)
  const onRetry = (m: EgressRetryMessage) => events.retries.push(m)
  const onSkipped = (m: EgressRetrySkippedMessage) => events.skipped.push(m)
  fetchChannels.attempt.subscribe(onAttempt)
  fetchChannels.attemptEnd.subscribe(onEnd)
  fetchChannels.retry.subscribe(onRetry)
  fetchChannels.retrySkipped.subscribe(onSkipped)
  events.stop = () => {
    fetchChannels.attempt.unsubscribe(onAttempt)
    fetchChannels.attemptEnd.unsubscribe(onEnd)
    fetchChannels.retry.unsubscribe(onRetry)
    fetchChannels.retrySkipped.unsubscribe(onSkipped)
  }
  return events
}

/** The system clock, counting timers that are set and not yet fired or cleared. */
export class CountingClock implements Clock {
  pending = 0
  readonly #live = new Set<unknown>()
  now(): number {
    return systemClock.now()
  }
  setTimeout(callback: () => void, ms: number, options?: TimerOptions): unknown {
    const handle: unknown = systemClock.setTimeout(
      () => {
        this.#live.delete(handle)
        this.pending = this.#live.size
        callback()
      },
      ms,
      options,
    )
    this.#live.add(handle)
    this.pending = this.#live.size
    return handle
  }
  clearTimeout(handle: unknown): void {
    systemClock.clearTimeout(handle)
    this.#live.delete(handle)
    this.pending = this.#live.size
  }
}

/** Await a promise that must reject, and return what it rejected with. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection, got a value')
}

/** Resolves with the next retry this process announces. */
export function nextRetry(): Promise<EgressRetryMessage> {
  return new Promise((resolve) => {
    const onRetry = (message: unknown) => {
      diagnostics.unsubscribe(fetchChannels.retry.name, onRetry)
      resolve(message as EgressRetryMessage)
    }
    diagnostics.subscribe(fetchChannels.retry.name, onRetry)
  })
}

/**
 * Registers an `afterEach` that closes the server the returned `listen`
 * started (its connections too) and returns `listen`: a node:http server on
 * loopback answering with `handler`, resolved to its base URL
 * (`http://127.0.0.1:<port>`, no trailing slash). Call it once, at a test
 * file's top level.
 */
export function useHttpServer(): (handler: RequestListener) => Promise<string> {
  let server: Server | undefined
  afterEach(async () => {
    if (server) {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    }
    server = undefined
  })
  return async function listen(handler: RequestListener): Promise<string> {
    server = createServer(handler)
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  }
}
