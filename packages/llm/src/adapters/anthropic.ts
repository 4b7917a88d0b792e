import { dialects } from '../dialects/dialects.js'
import { refuseUnknownAdapterOptions } from './checkAdapterOptions.js'
import { createAdapter } from './createAdapter.js'
import type { AdapterOptions, ModelAdapter } from './ModelAdapter.js'

/**
 * A model behind Anthropic's `POST {baseURL}/v1/messages` (`x-api-key`,
 * `anthropic-version`); `baseURL` is e.g. `https://api.anthropic.com`, as
 * Anthropic's SDK takes it — one ending in `/v1` is refused, as it would
 * ask `/v1/v1/messages`. Signed thinking blocks are sent back as they are;
 * unsigned ones (after a fallback stripped them) are left out, as the API
 * refuses them.
 */
export function anthropic(options: AdapterOptions): ModelAdapter {
  refuseUnknownAdapterOptions('anthropic()', options)
  return createAdapter(dialects.anthropic, options)
}
