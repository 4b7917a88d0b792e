import diagnostics from 'node:diagnostics_channel'
import { channelNames, type LlmAdmissionMessage, type LlmCooldownMessage } from '@hourglass/core'

const cooldownChannel = diagnostics.channel(channelNames.llmCooldown)
const admissionChannel = diagnostics.channel(channelNames.llmAdmission)

/** `hourglass:llm:cooldown`; `untilMs` is wall-clock epoch ms (Infinity for a retired key). */
export function publishCooldown(message: LlmCooldownMessage): void {
  if (cooldownChannel.hasSubscribers) cooldownChannel.publish(message)
}

/** `hourglass:llm:admission`. */
export function publishAdmission(message: LlmAdmissionMessage): void {
  if (admissionChannel.hasSubscribers) admissionChannel.publish(message)
}
