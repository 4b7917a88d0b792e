import { type LlmAdmissionMessage, type LlmCooldownMessage, llmChannels } from '../channels.js'

/** `hourglass:llm:cooldown`; `untilMs` is wall-clock epoch ms (Infinity for a retired key). */
export function publishCooldown(message: LlmCooldownMessage): void {
  llmChannels.cooldown.publish(() => message)
}

/** `hourglass:llm:admission`. */
export function publishAdmission(message: LlmAdmissionMessage): void {
  llmChannels.admission.publish(() => message)
}
