import type { ErrorKind, NormalizedError } from '../../types.js'
import { type BodyVerdict, classifyError, classifyStreamError } from '../classifyError.js'
import type { ErrorInput, StreamErrorInput } from '../ErrorInput.js'
import { lookup, readOpenAIError } from '../openai/errors.js'
import { getCode, getString } from '../safeJson.js'

/**
 * Baidu ERNIE / Qianfan codes. v1 answers HTTP 200 with `error_code`; v2 is
 * OpenAI-shaped with string codes. 17 (daily limit) and 19 (total limit) do
 * not clear within any request's deadline, so they are permanent; 18 (QPS),
 * 336501 (RPM) and 336502 (TPM) clear within seconds.
 */
const ERNIE_CODES: Readonly<Record<string, ErrorKind>> = {
  '18': 'rate_limited',
  '4': 'rate_limited',
  '336501': 'rate_limited',
  '336502': 'rate_limited',
  '336503': 'rate_limited',
  rpm_rate_limit_exceeded: 'rate_limited',
  tpm_rate_limit_exceeded: 'rate_limited',
  rate_limit_exceeded: 'rate_limited',
  '17': 'quota_exhausted',
  '19': 'quota_exhausted',
  '2': 'overloaded',
  // ServerHighLoad (bce-qianfan-sdk `APIErrorCode`; the SDK retries it, as
  // it retries the QPS limit): the provider's load, as 2 is. As a server
  // error nothing cooled, and every call went on sending to it after a
  // short backoff instead of waiting out an overload or falling back.
  '336100': 'overloaded',
  '1': 'server_error',
  '336000': 'server_error',
  '3': 'not_found',
  '6': 'auth',
  '13': 'auth',
  '14': 'auth',
  '15': 'auth',
  '110': 'auth',
  '111': 'auth',
  access_denied: 'auth',
  // Qianfan v2's 403s under `type: access_denied` that are not the key's
  // fault (its error-code table, cloud.baidu.com/doc/qianfan-api/s/Om9b4yj3w):
  // "Access denied due to overdue account" is a bill no wait lifts — sent
  // for one model at a time, not for the key (`readErnieError`); "The
  // model is offline" is this model gone, the key still serving the
  // others. Read by their type as `auth`, each retired the key for every
  // model it serves.
  account_overdue: 'quota_exhausted',
  model_offline: 'not_found',
  // v2's content review: `type: unsafe_request`, with a code naming the
  // field it judged (403 `system_unsafe`, `user_setting_unsafe`,
  // `functions_unsafe`; 400 `image_url_unsafe`). As the status's `auth`, a
  // client's system prompt retired the key — and every other key the call
  // moved to, refused the same way.
  unsafe_request: 'content_policy',
  invalid_model: 'not_found',
  // v1 sends these inside a 200, where a code not in this table reads as a
  // retryable server error: each was sent again and refused the same way.
  // Named as Baidu's SDK names them (bce-qianfan-sdk `APIErrorCode`):
  // PermissionError — this app may not call this model; its token still
  // serves the others, so not `auth`, which retires the key for every
  // model —, APINameNotExist (no such service path), and below
  // InvalidArgumentSystem, InvalidArgumentUserSetting.
  '336004': 'not_found',
  '336005': 'not_found',
  '100': 'bad_request',
  '336001': 'bad_request',
  '336002': 'bad_request',
  '336003': 'bad_request',
  '336006': 'bad_request',
  '336104': 'bad_request',
  '336105': 'bad_request',
  malformed_json: 'bad_request',
  '336007': 'context_too_long',
  '336103': 'context_too_long',
  characters_too_long: 'context_too_long',
  tokens_too_long: 'context_too_long',
}

function readErnieError(json: unknown): BodyVerdict | undefined {
  const v2 = readOpenAIError(json, ERNIE_CODES)
  // `account_overdue` comes model by model: on one v2 account,
  // ernie-4.5-turbo-128k, -32k and -vl answered while ernie-4.5-turbo-vl-32k
  // and ernie-x1.1-preview were refused as overdue. Read as the key's, the
  // spent bill retired the key — for good, by default — and the call's
  // fallback to another ERNIE model on it was refused unsent.
  if (v2?.providerCode === 'account_overdue') return { ...v2, scope: 'model' }
  if (v2 !== undefined) return v2
  // The issue's `{"code":336501}` spelling and v1's `error_code` are both seen.
  const code = getCode(json, 'error_code') ?? numericCode(json)
  if (code === undefined || code === '0') return undefined
  return {
    providerCode: code,
    message: getString(json, 'error_msg') ?? getString(json, 'message'),
    kind: lookup(ERNIE_CODES, code),
  }
}

function numericCode(json: unknown): string | undefined {
  const code = getCode(json, 'code')
  return code !== undefined && /^\d+$/.test(code) ? code : undefined
}

export function normalizeErnieError(input: ErrorInput): NormalizedError | undefined {
  return classifyError(input, readErnieError)
}

export function normalizeErnieStreamError(frame: StreamErrorInput): NormalizedError | undefined {
  return classifyStreamError(frame, readErnieError)
}
