import { describe, expect, it } from 'vitest'
import { anthropicAlwaysThinks } from '../../src/providers/anthropicAlwaysThinks.js'
import { anthropicContentRefused } from '../../src/providers/anthropicContentRefused.js'
import { anthropicSamplingRefused } from '../../src/providers/anthropicSamplingRefused.js'
import { anthropicThinkingDefaults } from '../../src/providers/anthropicThinkingDefaults.js'
import { anthropicThinkingRefused } from '../../src/providers/anthropicThinkingRefused.js'
import { refusesForcedTool } from '../../src/providers/refusesForcedTool.js'
import type { ErrorReply } from '../../src/providers/types.js'

// Every Anthropic rule that reads a model's version, asked of the same names:
// the answers a client meets, one short string per name. The rules share one
// reader (`claudeVersion`); this table held before they did.

const NAMES = [
  'claude-3-opus-20240229',
  'claude-3-haiku-20240307',
  'claude-3-5-sonnet-20241022',
  'claude-3-5-haiku@20241022',
  'claude-3-7-sonnet-20250219',
  'claude-3-7-sonnet-latest',
  'anthropic.claude-3-7-sonnet-20250219-v1:0',
  'claude-sonnet-4-20250514',
  'claude-opus-4-20250514',
  'claude-opus-4-1-20250805',
  'claude-opus-4-1',
  'claude-sonnet-4-5',
  'claude-sonnet-4-5-20250929',
  'claude-haiku-4-5-20251001',
  'us.anthropic.claude-haiku-4-5-20251001-v1:0',
  'global.anthropic.claude-sonnet-4-5-20250929-v1:0',
  'claude-sonnet-4-5@20250929',
  'claude-opus-4-5',
  'claude-opus-4-6',
  'claude-sonnet-4-6',
  'claude-opus-4-7',
  'claude-opus-4-8',
  'anthropic.claude-opus-4-7-v1:0',
  'claude-sonnet-5',
  'claude-sonnet-5-20260630',
  'claude-sonnet-5-5',
  'claude-sonnet-6',
  'claude-opus-5',
  'claude-opus-5-20260301',
  'claude-opus-5@20260301',
  'claude-opus-5-5',
  'claude-haiku-5',
  'claude-fable-5',
  'claude-fable-5-1',
  'claude-fable-6',
  'claude-mythos-5',
  'claude-mythos-5-1-20261001',
  'claude-mythos-preview',
  'claude-sonnet-latest',
  'claude-opus-50',
  'claude-instant-1.2',
  'claude-2.1',
  // Claude 3's form, but for a version that was never named so.
  'claude-4-sonnet',
  'claude-5-sonnet',
  'gpt-4o',
  '',
]

const message = (reply: ErrorReply | undefined) =>
  reply === undefined
    ? '-'
    : String((reply.body as { error?: { message?: string } }).error?.message).slice(0, 24)

function answers(model: string): string {
  const anthropic = ['anthropic', 'anthropic-messages'] as const
  const user = { role: 'user', content: 'hi' }
  const thinking = (type: string, effort?: string) =>
    message(
      anthropicThinkingRefused(...anthropic, {
        model,
        max_tokens: 4096,
        messages: [user],
        thinking: type === 'enabled' ? { type, budget_tokens: 2048 } : { type },
        ...(effort === undefined ? {} : { output_config: { effort } }),
      }),
    )
  const defaults = anthropicThinkingDefaults(model)
  return [
    `always=${anthropicAlwaysThinks(model)}`,
    `forced=${refusesForcedTool(model)}`,
    `defaults=${+defaults.thinks}${+defaults.omitsText}${+defaults.adaptiveOnly}`,
    `sampling=${message(anthropicSamplingRefused(...anthropic, { model, temperature: 0.5, top_p: 0.9 }))}`,
    `prefill=${message(anthropicContentRefused(...anthropic, { model, messages: [user, { role: 'assistant', content: 'ok' }] }))}`,
    `enabled=${thinking('enabled')}`,
    `adaptive=${thinking('adaptive')}`,
    `between=${thinking('between_tools')}`,
    `disabled=${thinking('disabled')}`,
    `disabledXhigh=${thinking('disabled', 'xhigh')}`,
  ].join(' ')
}

describe('the Anthropic rules that read a Claude version', () => {
  it('answer each model name as they did', () => {
    const table = Object.fromEntries(NAMES.map((name) => [name, answers(name)]))
    expect(table).toEqual(EXPECTED)
  })
})

const EXPECTED: Record<string, string> = {
  'claude-3-opus-20240229':
    "always=false forced=false defaults=000 sampling=- prefill=- enabled='claude-3-opus-20240229' adaptive='claude-3-opus-20240229' between=\"thinking.type.between_t disabled=- disabledXhigh=This model does not supp",
  'claude-3-haiku-20240307':
    "always=false forced=false defaults=000 sampling=- prefill=- enabled='claude-3-haiku-20240307 adaptive='claude-3-haiku-20240307 between=\"thinking.type.between_t disabled=- disabledXhigh=This model does not supp",
  'claude-3-5-sonnet-20241022':
    "always=false forced=false defaults=000 sampling=- prefill=- enabled='claude-3-5-sonnet-20241 adaptive='claude-3-5-sonnet-20241 between=\"thinking.type.between_t disabled=- disabledXhigh=This model does not supp",
  'claude-3-5-haiku@20241022':
    "always=false forced=false defaults=000 sampling=- prefill=- enabled='claude-3-5-haiku@202410 adaptive='claude-3-5-haiku@202410 between=\"thinking.type.between_t disabled=- disabledXhigh=This model does not supp",
  'claude-3-7-sonnet-20250219':
    'always=false forced=false defaults=000 sampling=- prefill=- enabled=- adaptive="thinking.type.adaptive" between="thinking.type.between_t disabled=- disabledXhigh=This model does not supp',
  'claude-3-7-sonnet-latest':
    'always=false forced=false defaults=000 sampling=- prefill=- enabled=- adaptive="thinking.type.adaptive" between="thinking.type.between_t disabled=- disabledXhigh=This model does not supp',
  'anthropic.claude-3-7-sonnet-20250219-v1:0':
    'always=false forced=false defaults=000 sampling=- prefill=- enabled=- adaptive="thinking.type.adaptive" between="thinking.type.between_t disabled=- disabledXhigh=This model does not supp',
  'claude-sonnet-4-20250514':
    'always=false forced=false defaults=000 sampling=- prefill=- enabled=- adaptive="thinking.type.adaptive" between="thinking.type.between_t disabled=- disabledXhigh=This model does not supp',
  'claude-opus-4-20250514':
    'always=false forced=false defaults=000 sampling=- prefill=- enabled=- adaptive="thinking.type.adaptive" between="thinking.type.between_t disabled=- disabledXhigh=This model does not supp',
  'claude-opus-4-1-20250805':
    'always=false forced=false defaults=000 sampling=`temperature` and `top_p prefill=- enabled=- adaptive="thinking.type.adaptive" between="thinking.type.between_t disabled=- disabledXhigh=This model does not supp',
  'claude-opus-4-1':
    'always=false forced=false defaults=000 sampling=`temperature` and `top_p prefill=- enabled=- adaptive="thinking.type.adaptive" between="thinking.type.between_t disabled=- disabledXhigh=This model does not supp',
  'claude-sonnet-4-5':
    'always=false forced=false defaults=000 sampling=`temperature` and `top_p prefill=- enabled=- adaptive="thinking.type.adaptive" between="thinking.type.between_t disabled=- disabledXhigh=This model does not supp',
  'claude-sonnet-4-5-20250929':
    'always=false forced=false defaults=000 sampling=`temperature` and `top_p prefill=- enabled=- adaptive="thinking.type.adaptive" between="thinking.type.between_t disabled=- disabledXhigh=This model does not supp',
  'claude-haiku-4-5-20251001':
    'always=false forced=false defaults=000 sampling=`temperature` and `top_p prefill=- enabled=- adaptive="thinking.type.adaptive" between="thinking.type.between_t disabled=- disabledXhigh=This model does not supp',
  'us.anthropic.claude-haiku-4-5-20251001-v1:0':
    'always=false forced=false defaults=000 sampling=`temperature` and `top_p prefill=- enabled=- adaptive="thinking.type.adaptive" between="thinking.type.between_t disabled=- disabledXhigh=This model does not supp',
  'global.anthropic.claude-sonnet-4-5-20250929-v1:0':
    'always=false forced=false defaults=000 sampling=`temperature` and `top_p prefill=- enabled=- adaptive="thinking.type.adaptive" between="thinking.type.between_t disabled=- disabledXhigh=This model does not supp',
  'claude-sonnet-4-5@20250929':
    'always=false forced=false defaults=000 sampling=`temperature` and `top_p prefill=- enabled=- adaptive="thinking.type.adaptive" between="thinking.type.between_t disabled=- disabledXhigh=This model does not supp',
  'claude-opus-4-5':
    'always=false forced=false defaults=000 sampling=`temperature` and `top_p prefill=- enabled=- adaptive="thinking.type.adaptive" between="thinking.type.between_t disabled=- disabledXhigh=output_config.effort \'xh',
  'claude-opus-4-6':
    'always=false forced=false defaults=000 sampling=`temperature` and `top_p prefill=This model does not supp enabled=- adaptive=- between="thinking.type.between_t disabled=- disabledXhigh=output_config.effort \'xh',
  'claude-sonnet-4-6':
    'always=false forced=false defaults=000 sampling=`temperature` and `top_p prefill=This model does not supp enabled=- adaptive=- between="thinking.type.between_t disabled=- disabledXhigh=output_config.effort \'xh',
  'claude-opus-4-7':
    'always=false forced=false defaults=011 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between="thinking.type.between_t disabled=- disabledXhigh=-',
  'claude-opus-4-8':
    'always=false forced=false defaults=011 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between="thinking.type.between_t disabled=- disabledXhigh=-',
  'anthropic.claude-opus-4-7-v1:0':
    'always=false forced=false defaults=011 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between="thinking.type.between_t disabled=- disabledXhigh=-',
  'claude-sonnet-5':
    'always=false forced=false defaults=111 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between="thinking.type.between_t disabled=- disabledXhigh=-',
  'claude-sonnet-5-20260630':
    'always=false forced=false defaults=111 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between="thinking.type.between_t disabled=- disabledXhigh=-',
  'claude-sonnet-5-5':
    'always=true forced=true defaults=111 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between=- disabled="thinking.type.disabled" disabledXhigh="thinking.type.disabled"',
  'claude-sonnet-6':
    'always=true forced=true defaults=111 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between=- disabled="thinking.type.disabled" disabledXhigh="thinking.type.disabled"',
  'claude-opus-5':
    'always=false forced=false defaults=111 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between="thinking.type.between_t disabled=- disabledXhigh=output_config.effort \'xh',
  'claude-opus-5-20260301':
    'always=false forced=false defaults=111 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between="thinking.type.between_t disabled=- disabledXhigh=output_config.effort \'xh',
  'claude-opus-5@20260301':
    'always=false forced=false defaults=111 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between="thinking.type.between_t disabled=- disabledXhigh=output_config.effort \'xh',
  'claude-opus-5-5':
    'always=true forced=true defaults=111 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between="thinking.type.between_t disabled="thinking.type.disabled" disabledXhigh="thinking.type.disabled"',
  'claude-haiku-5':
    'always=false forced=false defaults=111 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between="thinking.type.between_t disabled=- disabledXhigh=-',
  'claude-fable-5':
    'always=true forced=false defaults=111 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between="thinking.type.between_t disabled="thinking.type.disabled" disabledXhigh="thinking.type.disabled"',
  'claude-fable-5-1':
    'always=true forced=true defaults=111 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between="thinking.type.between_t disabled="thinking.type.disabled" disabledXhigh="thinking.type.disabled"',
  'claude-fable-6':
    'always=true forced=true defaults=111 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between="thinking.type.between_t disabled="thinking.type.disabled" disabledXhigh="thinking.type.disabled"',
  'claude-mythos-5':
    'always=true forced=false defaults=111 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between="thinking.type.between_t disabled="thinking.type.disabled" disabledXhigh="thinking.type.disabled"',
  'claude-mythos-5-1-20261001':
    'always=true forced=true defaults=111 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between="thinking.type.between_t disabled="thinking.type.disabled" disabledXhigh="thinking.type.disabled"',
  'claude-mythos-preview':
    'always=false forced=false defaults=000 sampling=- prefill=- enabled=- adaptive=- between=- disabled=- disabledXhigh=-',
  'claude-sonnet-latest':
    'always=false forced=false defaults=000 sampling=- prefill=- enabled=- adaptive=- between=- disabled=- disabledXhigh=-',
  'claude-opus-50':
    'always=true forced=true defaults=111 sampling=`temperature` is depreca prefill=This model does not supp enabled="thinking.type.enabled"  adaptive=- between="thinking.type.between_t disabled="thinking.type.disabled" disabledXhigh="thinking.type.disabled"',
  'claude-instant-1.2':
    'always=false forced=false defaults=000 sampling=- prefill=- enabled=- adaptive=- between=- disabled=- disabledXhigh=-',
  'claude-2.1':
    'always=false forced=false defaults=000 sampling=- prefill=- enabled=- adaptive=- between=- disabled=- disabledXhigh=-',
  // No model was named in Claude 3's form after it: these name none, and are
  // taken at their word, as `claude-sonnet-latest` is.
  'claude-4-sonnet':
    'always=false forced=false defaults=000 sampling=- prefill=- enabled=- adaptive=- between=- disabled=- disabledXhigh=-',
  'claude-5-sonnet':
    'always=false forced=false defaults=000 sampling=- prefill=- enabled=- adaptive=- between=- disabled=- disabledXhigh=-',
  'gpt-4o':
    'always=false forced=false defaults=000 sampling=- prefill=- enabled=- adaptive=- between=- disabled=- disabledXhigh=-',
  '': 'always=false forced=false defaults=000 sampling=- prefill=- enabled=- adaptive=- between=- disabled=- disabledXhigh=-',
}
