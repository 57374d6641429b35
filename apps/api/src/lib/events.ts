// Publishing from actions: an action's events are written to the outbox in its transaction
// and handed to Redis after it commits (lib/outbox.ts), so a committed change never loses
// them. Events about state nobody stores (typing, presence) are published at once, like
// Zulip's send_event_rollback_unsafe.
import { getConfig } from '@parley/config';
import type { ActionContext } from '@parley/db';
import { getRedis, publishNotification, type Notification, type ZulipEvent } from '@parley/events';
import { publishCommitted, writeOutbox } from './outbox';

/** The notifications an action queued so far, written to the outbox just before COMMIT. */
const pending = new WeakMap<object, Notification[]>();

export function sendEventOnCommit(
  ctx: Pick<ActionContext, 'tx' | 'onCommit' | 'beforeCommit' | 'authChangesRead'>,
  event: ZulipEvent,
  users: Iterable<number>,
): void {
  const recipients = [...new Set(users)];
  if (recipients.length === 0) return;
  let queued = pending.get(ctx.tx);
  if (!queued) {
    queued = [];
    pending.set(ctx.tx, queued);
    const notifications = queued;
    ctx.beforeCommit(async () => {
      const written = await writeOutbox(ctx, notifications);
      ctx.onCommit(() => publishCommitted(written));
    });
  }
  queued.push({ event, users: recipients });
}

/** Publishes at once: only for events that describe no database change. */
export async function sendEventNow(event: ZulipEvent, users: Iterable<number>): Promise<void> {
  const recipients = [...new Set(users)];
  if (recipients.length === 0) return;
  await publishNotification(getRedis(), getConfig().EVENT_SHARDS, { event, users: recipients });
}

/** Groups viewers who get the same form of an event (addresses differ with email
 * visibility): `keyOf` names the form a viewer gets, so each form is built and published
 * once, however many viewers share it. */
export function eventsByForm<V extends { id: number }>(
  viewers: Iterable<V>,
  keyOf: (viewer: V) => string,
  build: (viewer: V) => ZulipEvent,
): { event: ZulipEvent; users: number[] }[] {
  const forms = new Map<string, { event: ZulipEvent; users: number[] }>();
  for (const viewer of viewers) {
    const key = keyOf(viewer);
    const form = forms.get(key);
    if (form) form.users.push(viewer.id);
    else forms.set(key, { event: build(viewer), users: [viewer.id] });
  }
  return [...forms.values()];
}
