import type { ProviderDialect, RecordedRequest } from './types.js'

/**
 * The answer to `GET …/models` in the shape of the API the request speaks —
 * every fake answers every format, and OpenAI and Anthropic share the path
 * `/v1/models`:
 * - Gemini (`/v1beta/models`, a Gemini key header, or a gemini fake):
 *   `{"models":[{"name":"models/…","displayName",…,"supportedGenerationMethods"}]}`
 *   (ai.google.dev/api/models#method:-models.list);
 * - Anthropic (an `anthropic-version` header, which its SDKs always send, or
 *   an anthropic fake): `{"data":[{"type":"model","id","display_name",
 *   "created_at"}],"has_more","first_id","last_id"}` (docs.claude.com/en/api/models-list);
 * - anyone else: OpenAI's `{"object":"list","data":[{"id","object":"model",…}]}`.
 */
export function modelList(
  dialect: ProviderDialect,
  request: RecordedRequest,
  models: readonly string[],
): unknown {
  const gemini =
    /\/v1(alpha|beta)\/models\/?$/.test(request.path) ||
    request.headers['x-goog-api-key'] !== undefined ||
    request.query['key'] !== undefined ||
    (dialect === 'gemini' && request.headers['anthropic-version'] === undefined)
  if (gemini) {
    return {
      models: models.map((id) => ({
        name: `models/${id}`,
        version: '001',
        displayName: id,
        description: 'A model of the Hourglass fake provider.',
        inputTokenLimit: 1_048_576,
        outputTokenLimit: 65_536,
        supportedGenerationMethods: ['generateContent', 'countTokens'],
      })),
    }
  }
  if (request.headers['anthropic-version'] !== undefined || dialect === 'anthropic') {
    return {
      data: models.map((id) => ({
        type: 'model',
        id,
        display_name: id,
        created_at: '2025-01-01T00:00:00Z',
      })),
      has_more: false,
      first_id: models[0] ?? null,
      last_id: models.at(-1) ?? null,
    }
  }
  return {
    object: 'list',
    data: models.map((id) => ({
      id,
      object: 'model',
      created: 1_700_000_000,
      owned_by: 'hourglass-fake',
    })),
  }
}
