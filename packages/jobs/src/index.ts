export {
  closeQueues,
  enqueueJob,
  JOB_QUEUES,
  jobsConnection,
  QUEUE_NAMES,
  repeatingJobSchedule,
  scheduleRepeatingJob,
  type JobData,
  type JobName,
  type QueueName,
  jobIsRunning,
  removeIfFailed,
  queueFor,
} from './queues';
export { startJobWorkers, type JobHandlers, type JobWorkers } from './worker';
export { registerJobQueueMetrics } from './metrics';
export { closeMail, noreplyAddress, sendMail, supportAddress, type MailMessage } from './mail';
export {
  failedJobQueues,
  FailedJobLookupError,
  listFailedJobs,
  removeFailedJob,
  retryFailedJob,
  type FailedJob,
  type FailedJobList,
} from './failed';
