export { type AddWithDeadlineOptions, addWithDeadline, type QueueLike } from './addWithDeadline.js'
export {
  type BullmqAddMessage,
  type BullmqAttemptOutcome,
  type BullmqEndMessage,
  type BullmqEnforcedOutcome,
  type BullmqEnqueueMessage,
  type BullmqExpireMessage,
  type BullmqInvalidMessage,
  type BullmqJobMessage,
  type BullmqRefusal,
  type BullmqRefuseMessage,
  type BullmqStartMessage,
  bullmqChannels,
} from './channels.js'
export { fromJobError } from './fromJobError.js'
export {
  isJobDeadlineExceeded,
  type JobDeadlineExceededDetails,
  JobDeadlineExceededError,
  type JobDeadlineStage,
} from './JobDeadlineExceededError.js'
export { isJobLockLost, JobLockLostError, type JobLockLostWhy } from './JobLockLostError.js'
export { DEADLINE_OPTION, type StoredDeadline } from './storedDeadline.js'
export {
  type DeadlineCounts,
  type DeadlineProcessor,
  type WithDeadlineOptions,
  withDeadline,
} from './withDeadline.js'
