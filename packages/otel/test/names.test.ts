import * as otel from '@hourglass/otel'
import {
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_ID,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
  ATTR_OPENAI_RESPONSE_SERVICE_TIER,
  ATTR_OPENAI_RESPONSE_SYSTEM_FINGERPRINT,
} from '@hourglass/otel'
import { describe, expect, it } from 'vitest'
import * as attributes from '../src/attributes.js'

describe('names', () => {
  it('every GenAI attribute name set on model attempt spans is exported from the package', () => {
    expect([
      ATTR_GEN_AI_OPERATION_NAME,
      ATTR_GEN_AI_PROVIDER_NAME,
      ATTR_GEN_AI_REQUEST_MODEL,
      ATTR_GEN_AI_RESPONSE_MODEL,
      ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
      ATTR_GEN_AI_USAGE_INPUT_TOKENS,
      ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
      ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
      ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
      ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
      ATTR_GEN_AI_RESPONSE_ID,
      ATTR_OPENAI_RESPONSE_SYSTEM_FINGERPRINT,
      ATTR_OPENAI_RESPONSE_SERVICE_TIER,
    ]).toEqual([
      'gen_ai.operation.name',
      'gen_ai.provider.name',
      'gen_ai.request.model',
      'gen_ai.response.model',
      'gen_ai.response.finish_reasons',
      'gen_ai.usage.input_tokens',
      'gen_ai.usage.output_tokens',
      'gen_ai.usage.cache_read.input_tokens',
      'gen_ai.usage.cache_creation.input_tokens',
      'gen_ai.usage.reasoning.output_tokens',
      'gen_ai.response.id',
      'openai.response.system_fingerprint',
      'openai.response.service_tier',
    ])
  })

  it('every name defined in src/attributes.ts is exported from the package, as the README says', () => {
    const missing = Object.entries(attributes)
      .filter(([name, value]) => (otel as Record<string, unknown>)[name] !== value)
      .map(([name]) => name)
    expect(missing).toEqual([])
  })

  it('every attribute, event and metric name is under hourglass. or borrowed from a convention that has it', () => {
    // OpenTelemetry's semantic conventions (OpenAI's response fields and the
    // server's address among them), and BullMQ's own telemetry for a job's name.
    const borrowed =
      /^(http\.|url\.|error\.type$|rpc\.|messaging\.|gen_ai\.|openai\.response\.(system_fingerprint|service_tier)$|server\.(address|port)$|bullmq\.job\.name$)/
    const names = Object.entries(attributes)
      .filter(([name]) => /^(ATTR|EVENT|METRIC)_/.test(name))
      .map(([, value]) => value as string)
    expect(names.length).toBeGreaterThan(50)
    expect(names.filter((n) => !n.startsWith('hourglass.') && !borrowed.test(n))).toEqual([])
  })
})
