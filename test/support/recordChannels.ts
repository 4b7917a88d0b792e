import diagnostics from 'node:diagnostics_channel'
import { channelNames } from '@hourglass/core'

export interface ChannelLog {
  /** Every message, with its channel, in publication order. */
  readonly messages: { channel: string; message: unknown; at: number }[]
  count(channel: string): number
  stop(): void
}

/** Subscribe to every channel core's `channelNames` lists, until `stop()`. */
export function recordChannels(): ChannelLog {
  const messages: ChannelLog['messages'] = []
  const subs = Object.values(channelNames).map((channel) => {
    const fn = (message: unknown) => messages.push({ channel, message, at: performance.now() })
    diagnostics.subscribe(channel, fn)
    return [channel, fn] as const
  })
  return {
    messages,
    count: (channel) => messages.filter((m) => m.channel === channel).length,
    stop() {
      for (const [channel, fn] of subs) diagnostics.unsubscribe(channel, fn)
    },
  }
}
