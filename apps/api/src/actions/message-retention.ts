// Message retention (Zulip's retention.py archive_messages, a daily cron there, a daily job
// here): a channel's messages older than its message_retention_days (or the organization's,
// when the channel's is null) are deleted, and direct messages older than the organization's;
// -1 keeps them forever. Zulip moves them to an archive it empties after 30 days; Parley has no
// archive, so they go at once, in batches, each telling its recipients (delete_message) so
// their clients drop them too. Their uploads follow, once unclaimed (upload-cleanup.ts).
import { Prisma, query, runAction, statement } from '@parley/db';
import { doDeleteMessageBatch, MESSAGE_DELETION_BATCH_SIZE } from './bulk-message-deletion';

const DAY_MS = 24 * 3600 * 1000;

/** What has a retention period in the active organizations: each channel whose own period or
 * its organization's is set (a recipient id), and each organization's direct messages (no
 * recipient id). */
const retentionScopes = statement<
  { realmId: number; recipientId: number | null; days: number },
  []
>(`
  SELECT s.realm_id AS "realmId", s.recipient_id AS "recipientId",
    COALESCE(s.message_retention_days, r.message_retention_days) AS days
  FROM stream s JOIN realm r ON r.id = s.realm_id
  WHERE NOT r.deactivated AND s.recipient_id IS NOT NULL
    AND COALESCE(s.message_retention_days, r.message_retention_days) > 0
  UNION ALL
  SELECT r.id, NULL, r.message_retention_days FROM realm r
  WHERE NOT r.deactivated AND r.message_retention_days > 0`);

export interface RetentionOptions {
  now?: Date;
  batchSize?: number;
}

/** Deletes every message past its retention period; returns how many. Each batch commits on
 * its own: a failure leaves the earlier ones deleted, and the next run goes on. */
export async function deleteExpiredMessages({
  now = new Date(),
  batchSize = MESSAGE_DELETION_BATCH_SIZE,
}: RetentionOptions = {}): Promise<number> {
  let deleted = 0;
  for (const scope of await query(retentionScopes, [])) {
    const cutoff = new Date(now.getTime() - scope.days * DAY_MS);
    // No order: whichever expired rows come first go. Both forms may use the (realm_id,
    // date_sent) index, which finds a channel's expired messages without walking the channel
    // when it has few; deleted rows leave the next batch's range.
    const selection =
      scope.recipientId === null
        ? Prisma.sql`
            SELECT m.id FROM message m
            WHERE m.realm_id = ${scope.realmId} AND m.date_sent < ${cutoff}
              AND NOT m.is_channel_message
            LIMIT ${batchSize}`
        : Prisma.sql`
            SELECT m.id FROM message m
            WHERE m.realm_id = ${scope.realmId} AND m.recipient_id = ${scope.recipientId}
              AND m.date_sent < ${cutoff}
            LIMIT ${batchSize}`;
    for (;;) {
      const batch = await runAction((ctx) => doDeleteMessageBatch(ctx, selection));
      deleted += batch.taken;
      if (batch.taken < batchSize) break;
    }
  }
  return deleted;
}
