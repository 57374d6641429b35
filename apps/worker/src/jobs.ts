// Every background job and the code that runs it. The record is exhaustive over the job
// names (packages/jobs), so a new job cannot be forgotten here; the standalone server and
// the worker tier both start exactly this.
import { requeueUnsentInvitationEmails, sendInvitationEmail } from '@parley/api/actions/invites';
import { promoteFullMembers } from '@parley/api/actions/realm-settings';
import {
  scheduleRepeatingJob,
  startJobWorkers,
  type JobHandlers,
  type JobWorkers,
} from '@parley/jobs';
import { getLogger } from '@parley/logger';

export const JOB_HANDLERS: JobHandlers = {
  'invitation-email': sendInvitationEmail,
  'promote-full-members': async () => {
    const promoted = await promoteFullMembers();
    if (promoted > 0) getLogger().info('members promoted to full members', { count: promoted });
  },
};

/** Zulip promotes members once a day; hourly keeps a promotion within an hour of its due
 * time at the cost of one indexed query per organization with a waiting period. */
export const FULL_MEMBER_PROMOTION_EVERY_MS = 3600_000;

export interface WorkerOptions {
  concurrency?: number;
  /** How often to queue again the emails whose job was lost and declare the repeating
   * jobs (0: never). */
  sweepIntervalMs?: number;
}

/** Starts the workers, and a periodic sweep that queues again invitation emails asked for
 * but never sent (a job lost between a commit and Redis) and declares the repeating jobs'
 * schedules again (a Redis that lost its data forgets them; declaring is idempotent). */
export function startWorkers({
  concurrency,
  sweepIntervalMs = 60_000,
}: WorkerOptions = {}): JobWorkers {
  const workers = startJobWorkers(JOB_HANDLERS, { concurrency });
  const sweep = () => {
    requeueUnsentInvitationEmails().then(
      (count) => {
        if (count > 0) getLogger().info('invitation emails queued again', { count });
      },
      (error: unknown) => getLogger().warn('invitation email sweep failed', { error }),
    );
    scheduleRepeatingJob('promote-full-members', {}, FULL_MEMBER_PROMOTION_EVERY_MS).catch(
      (error: unknown) => getLogger().warn('scheduling full-member promotion failed', { error }),
    );
  };
  const timer = sweepIntervalMs > 0 ? setInterval(sweep, sweepIntervalMs) : undefined;
  timer?.unref();
  if (timer) sweep();
  return {
    ready: () => workers.ready(),
    async close() {
      clearInterval(timer);
      await workers.close();
    },
  };
}
