import diagnostics from 'node:diagnostics_channel'
import { coreChannels } from '@hourglass/core'
import { expressChannels } from '@hourglass/express'
import { fetchChannels } from '@hourglass/fetch'
import { llmChannels } from '@hourglass/llm'

export interface ChannelLog {
  /** Every message, with its channel, in publication order. */
  readonly messages: { channel: string; message: unknown; at: number }[]
  count(channel: string): number
  stop(): void
}

/** Every channel of core, express, fetch and llm: the packages a chaos chain runs. */
const channels = [coreChannels, expressChannels, fetchChannels, llmChannels].flatMap((group) =>
  Object.values(group).map((channel) => channel.name),
)

/** Subscribe to all of them until `stop()`. */
export function recordChannels(): ChannelLog {
  const messages: ChannelLog['messages'] = []
  const subs = channels.map((channel) => {
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
