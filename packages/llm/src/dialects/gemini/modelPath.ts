/**
 * The path of `model`'s resource, which `:generateContent` is appended to.
 * Gemini names a model `models/{id}` (what ListModels answers, and what
 * @google/genai takes as it is) or, tuned, `tunedModels/{id}`, a collection
 * of its own; a bare id is under `models/`. The id is one escaped segment:
 * Google's routing (`{model=models/*}`) decodes it into the name, so a
 * resource name escaped whole (`/models/models%2Fgemini-2.5-flash`) asked
 * for `models/models/gemini-2.5-flash` — a 404 on every call — and a tuned
 * model could not be reached at all.
 */
export function geminiModelPath(model: string): string {
  const named = RESOURCE_NAME.exec(model)
  return named === null
    ? `/models/${encodeURIComponent(model)}`
    : `/${named[1]}/${encodeURIComponent(named[2] as string)}`
}

/** `models/{id}` or `tunedModels/{id}`, the id one path segment. */
const RESOURCE_NAME = /^(models|tunedModels)\/([^/]+)$/
