import { dialects } from '../dialects/dialects.js'
import { refuseUnknownAdapterOptions } from './checkAdapterOptions.js'
import { createAdapter } from './createAdapter.js'
import type { AdapterOptions, ModelAdapter } from './ModelAdapter.js'

/**
 * A model behind Gemini's `POST {baseURL}/models/{model}:generateContent`
 * (`:streamGenerateContent?alt=sse` when streaming), `x-goog-api-key`.
 * `baseURL` is e.g. `https://generativelanguage.googleapis.com/v1beta`.
 */
export function gemini(options: AdapterOptions): ModelAdapter {
  refuseUnknownAdapterOptions('gemini()', options)
  return createAdapter(dialects.gemini, options)
}
