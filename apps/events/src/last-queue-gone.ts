// Zulip's missedmessage_hook. A message that arrives while its recipient has a client open is
// not emailed, nor pushed to a user who turned enable_online_push_notifications off (the
// send's jobs find the user present); if that client then goes away without reading it (a
// laptop closed, a tab shut), its queue is deleted or expires holding the message, and that is
// the moment to notify after all. The queue's removal reports the unread messages it held when
// it was the user's last (QueueStore's GoneQueue); this queues the `last-queue-gone` job, which
// sends the notifications of them the send's jobs had set aside
// (apps/api/src/actions/set-aside-notifications.ts).
import { type GoneQueue } from '@parley/events';
import { enqueueJob } from '@parley/jobs';
import { getLogger } from '@parley/logger';

/** The job's id: one per queue (BullMQ ids may not hold the queue id's colon). */
export function lastQueueGoneJobId(queueId: string): string {
  return `last-queue-gone-${queueId.replaceAll(':', '-')}`;
}

/** Queues a `last-queue-gone` job for each queue that was its user's last and held unread
 * messages. Never throws: the queue is gone either way, and a lost job loses no event, only
 * the notifications it could have led to (logged). */
export async function queueLastQueueGone(gone: GoneQueue[]): Promise<void> {
  await Promise.all(
    gone
      .filter((queue) => queue.userId > 0 && queue.unreadMessageIds.length > 0)
      .map((queue) =>
        enqueueJob(
          'last-queue-gone',
          { userId: queue.userId, messageIds: queue.unreadMessageIds },
          lastQueueGoneJobId(queue.queueId),
        ).catch((error: unknown) =>
          getLogger().error('queuing the notifications of a gone queue failed', {
            error,
            user_id: queue.userId,
            queue_id: queue.queueId,
          }),
        ),
      ),
  );
}
