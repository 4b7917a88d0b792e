import diagnostics from 'node:diagnostics_channel'
import {
  channelNames,
  type EgressAttemptEndMessage,
  type EgressAttemptMessage,
  type EgressRetryMessage,
  type EgressRetrySkippedMessage,
} from '@hourglass/core'

const attemptChannel = diagnostics.channel(channelNames.egressAttempt)
const attemptEndChannel = diagnostics.channel(channelNames.egressAttemptEnd)
const retryChannel = diagnostics.channel(channelNames.egressRetry)
const retrySkippedChannel = diagnostics.channel(channelNames.egressRetrySkipped)

// Message objects are built only when someone listens: no subscriber, no cost.
export function publishAttempt(build: () => EgressAttemptMessage): void {
  if (attemptChannel.hasSubscribers) attemptChannel.publish(build())
}

export function publishAttemptEnd(build: () => EgressAttemptEndMessage): void {
  if (attemptEndChannel.hasSubscribers) attemptEndChannel.publish(build())
}

export function publishRetry(build: () => EgressRetryMessage): void {
  if (retryChannel.hasSubscribers) retryChannel.publish(build())
}

export function publishRetrySkipped(build: () => EgressRetrySkippedMessage): void {
  if (retrySkippedChannel.hasSubscribers) retrySkippedChannel.publish(build())
}

/** Origin and path only: a query string may carry secrets. */
export function eventUrl(origin: string, path: string): string {
  const q = path.indexOf('?')
  return origin + (q === -1 ? path : path.slice(0, q))
}
