import { dialects } from '../llm.js'

/**
 * The names the gateway shows anyway: a dialect's, and the config's
 * provider, model and alias names (each answer's `x-hourglass-provider`,
 * `GET /v1/models`, metric labels) and upstream model names (the request
 * line's `upstreamModel`). A configured key or header value that is one of
 * them is no secret (Ollama's documented key is `ollama`, the name its
 * provider is given), and is not scrubbed: scrubbed, the word went from
 * every string — the request and attempt lines of a provider so named said
 * `provider: "[redacted]"`, and its clients' errors `no provider could
 * answer ([redacted]/llama3: …)`.
 */
export function publishedNames(config: {
  providers: Readonly<Record<string, unknown>>
  models: Readonly<Record<string, { fallback?: ReadonlyArray<{ model: string }> | undefined }>>
  aliases: Readonly<Record<string, string>>
}): ReadonlySet<string> {
  const names = new Set<string>([
    ...Object.keys(dialects),
    ...Object.keys(config.providers),
    ...Object.keys(config.models),
    ...Object.keys(config.aliases),
  ])
  for (const entry of Object.values(config.models)) {
    for (const target of entry.fallback ?? []) names.add(target.model)
  }
  return names
}
