import type { ErrorKind, NormalizedError } from '../../types.js'
import { type BodyVerdict, classifyError, classifyStreamError } from '../classifyError.js'
import type { ErrorInput, StreamErrorInput } from '../ErrorInput.js'
import { lookup, readOpenAIError } from '../openai/errors.js'
import { get, getCode, getString } from '../safeJson.js'

/**
 * DashScope (Qwen) codes, native and OpenAI-compatible spellings. All three
 * `Throttling*` codes are per-minute limits (QPM, TPM) that clear by
 * themselves; running out of money is `Arrearage` (or an overdue bill's
 * 429) and a spent free tier is `AllocationQuota.FreeTierOnly`. `insufficient_quota` is compatible mode's
 * spelling of the per-minute token throttle on a 429 (`tokenThrottle` below).
 */
const QWEN_CODES: Readonly<Record<string, ErrorKind>> = {
  Throttling: 'rate_limited',
  'Throttling.RateQuota': 'rate_limited',
  'Throttling.AllocationQuota': 'rate_limited',
  'Throttling.BurstRate': 'rate_limited',
  limit_requests: 'rate_limited',
  'AllocationQuota.FreeTierOnly': 'quota_exhausted',
  Arrearage: 'quota_exhausted',
  insufficient_quota: 'quota_exhausted',
  // 429s by status, the workspace's bill by meaning (Model Studio's error
  // codes: "Commodity has not purchased yet.", "The prepaid bill is
  // overdue.", "The postpaid bill is overdue."): no wait lifts them. As the
  // status's rate limit each was retried and cooled, again and again.
  CommodityNotPurchased: 'quota_exhausted',
  PrepaidBillOverdue: 'quota_exhausted',
  PostpaidBillOverdue: 'quota_exhausted',
  DataInspectionFailed: 'content_policy',
  data_inspection_failed: 'content_policy',
  'InvalidParameter.DataInspection': 'content_policy',
  InvalidApiKey: 'auth',
  invalid_api_key: 'auth',
  // 403s that refuse one model on this key (Model Studio's status codes:
  // `AccessDenied`, "no access to this API, e.g. not in its invitation-only
  // test"; `AccessDenied.Unpurchased`, "Access to model denied. Please make
  // sure you are eligible for using the model", the model not purchased):
  // the account's, so `auth` — another key (another account) may have it —
  // but `scope: 'model'` (`readQwenError`): the same key serves the
  // account's other models, and a bad key is 401 `InvalidApiKey`. Compatible
  // mode spells the first `access_denied`.
  AccessDenied: 'auth',
  access_denied: 'auth',
  'AccessDenied.Unpurchased': 'auth',
  // 403 "Model access denied." (Model Studio's status codes): the key's
  // workspace is not granted this model — a sub-workspace's key calls only
  // the models its workspace was given permission for, and goes on serving
  // those. As the status's `auth` it retired the key for every model: the
  // call's fallback to a model the workspace may call was refused unsent.
  'Model.AccessDenied': 'auth',
  ModelNotFound: 'not_found',
  model_not_found: 'not_found',
  RequestTimeOut: 'timeout',
  InternalError: 'server_error',
  'InternalError.Algo': 'server_error',
  'InternalError.Timeout': 'timeout',
  ServiceUnavailable: 'overloaded',
}

const MODEL_REFUSED: ReadonlySet<string> = new Set([
  'AccessDenied',
  'access_denied',
  'AccessDenied.Unpurchased',
  'Model.AccessDenied',
])

/**
 * Native DashScope puts `code`/`message` at the top level; compatible mode
 * nests OpenAI's `error` object. Both can arrive with HTTP 200 (a native
 * body with a non-empty `code` is an error whatever the status).
 */
function readQwenError(json: unknown, _text: string, status: number): BodyVerdict | undefined {
  const compat = readOpenAIError(json, QWEN_CODES)
  const code = compat?.providerCode ?? getCode(json, 'code')
  if (compat === undefined && (code === undefined || get(json, 'output') !== undefined)) {
    return undefined
  }
  const message = compat?.message ?? getString(json, 'message')
  const kind = compat?.kind ?? lookup(QWEN_CODES, code) ?? contextTooLong(message)
  const throttled = tokenThrottle(kind, code, message, status)
  // Compatible mode's codes name the limit: its token throttle (above), `limit_requests`.
  const limitedBy = throttled
    ? 'tokens'
    : code === 'limit_requests'
      ? 'requests'
      : compat?.limitedBy
  // Compatible mode's verdict is OpenAI's reader's, corrected: built anew,
  // it lost what that reader finds (the `param` a 400 names, a wait in the
  // message's words, a too-large request's kind and figures).
  const verdict: BodyVerdict = {
    ...compat,
    providerCode: code,
    message,
    kind: throttled ? 'rate_limited' : kind,
  }
  if (limitedBy !== undefined) verdict.limitedBy = limitedBy
  // Model Studio's free quota is each model's own, and "Free Quota Only" is
  // switched on model by model (help.aliyun.com/zh/model-studio/new-free-quota,
  // the Model Usage page: a 403 `AllocationQuota.FreeTierOnly` when that
  // model's quota runs out): the key still calls the models whose quota is
  // left. Read as the key's, the spent quota retired the key — for good, by
  // default — and a fallback to another Qwen model on it was refused unsent.
  if (code === 'AllocationQuota.FreeTierOnly') verdict.scope = 'model'
  // One model refused to this account (above). As the key's `auth` it
  // retired the key for every model it serves, and the call's fallback to
  // another Qwen model on it was refused unsent; as `not_found`, which is no
  // key's, the provider's other key — another account, which may have
  // bought the model — was never tried: every call failed on the first key.
  if (code !== undefined && MODEL_REFUSED.has(code)) verdict.scope = 'model'
  return verdict
}

/**
 * Compatible mode sends its per-minute *token* throttle (natively
 * `Throttling.AllocationQuota`) in OpenAI's billing words: HTTP 429,
 * `"code":"insufficient_quota"`, "You exceeded your current quota, please
 * check your plan and billing details. For details, see:
 * https://help.aliyun.com/zh/model-studio/error-code#token-limit". It clears
 * within the minute, so it is a rate limit — retried after any
 * `Retry-After`, and the key is not retired. Seen and fixed the same way in
 * can1357/oh-my-pi (#8496, #8476, #8498) and openclaw/openclaw (#148275).
 * Real arrears come as `Arrearage` and stay permanent; so does
 * `insufficient_quota` on another status, unless its message points at the
 * token-limit doc.
 */
function tokenThrottle(
  kind: ErrorKind | undefined,
  code: string | undefined,
  message: string | undefined,
  status: number,
): boolean {
  const pointsAtTokenLimit = message?.includes('error-code#token-limit') === true
  if (code === 'insufficient_quota') return status === 429 || pointsAtTokenLimit
  return kind === undefined && pointsAtTokenLimit
}

/** Qwen reports an over-long prompt as `InvalidParameter` with "Range of input length should be …". */
function contextTooLong(message: string | undefined): ErrorKind | undefined {
  const m = message?.toLowerCase() ?? ''
  return m.includes('range of input length') || m.includes('input length exceeds')
    ? 'context_too_long'
    : undefined
}

export function normalizeQwenError(input: ErrorInput): NormalizedError | undefined {
  return classifyError(input, readQwenError)
}

/** Native `event:error` frames and compatible-mode `{"error":…}` data frames after a 200. */
export function normalizeQwenStreamError(frame: StreamErrorInput): NormalizedError | undefined {
  return classifyStreamError(frame, readQwenError)
}
