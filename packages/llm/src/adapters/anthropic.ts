import { dialects } from '../dialects/dialects.js'
import { createAdapter } from './createAdapter.js'
import type { AdapterOptions, ModelAdapter } from './ModelAdapter.js'

/**
 * A model behind Anthropic's `POST {baseURL}/v1/messages` (`x-api-key`,
 * `anthropic-version`). Signed thinking blocks are sent back as they are;
 * unsigned ones (after a fallback stripped them) are left out, as the API
 * refuses them.
 */
export function anthropic(options: AdapterOptions): ModelAdapter {
  return createAdapter(dialects.anthropic, options)
}
