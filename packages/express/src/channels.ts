import diagnostics from 'node:diagnostics_channel'
import { channelNames } from '@hourglass/core'

// Message shapes live in @hourglass/core (channels.ts) so subscribers need not import Express.
export const ingressStartChannel = diagnostics.channel(channelNames.ingressStart)
export const ingressInvalidHeaderChannel = diagnostics.channel(channelNames.ingressInvalidHeader)
export const ingressExpireChannel = diagnostics.channel(channelNames.ingressExpire)
export const ingressClientClosedChannel = diagnostics.channel(channelNames.ingressClientClosed)
export const ingressLateWriteChannel = diagnostics.channel(channelNames.ingressLateWrite)
export const ingressEndChannel = diagnostics.channel(channelNames.ingressEnd)
