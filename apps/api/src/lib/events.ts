// Publishing from actions: events are handed to Redis only after the transaction commits.
import { getConfig } from '@parley/config';
import type { ActionContext } from '@parley/db';
import { getRedis, publishNotification, type ZulipEvent } from '@parley/events';

export function sendEventOnCommit(
  ctx: Pick<ActionContext, 'onCommit'>,
  event: ZulipEvent,
  users: Iterable<number>,
): void {
  const recipients = [...new Set(users)];
  if (recipients.length === 0) return;
  ctx.onCommit(() =>
    publishNotification(getRedis(), getConfig().EVENT_SHARDS, { event, users: recipients }),
  );
}
