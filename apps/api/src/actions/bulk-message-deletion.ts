// Deleting many messages at once, in batches that each commit on their own (a deactivated
// user's messages, messages past their retention period): one statement per batch, and one
// bulk delete_message event per topic or direct conversation.
import { columnsOf, Prisma, type ActionContext, type Stream } from '@parley/db';
import type { ZulipEvent } from '@parley/events';
import { sendEventOnCommit } from '../lib/events';
import { refreshFirstMessageId } from './message-edit';

/** Rows deleted per transaction: a batch's events and locks stay small. */
export const MESSAGE_DELETION_BATCH_SIZE = 1000;

/** One delete_message event's worth of a batch: a topic of a channel, or a direct
 * conversation; with every user who had one of its messages. */
interface DeletedGroup {
  ids: number[];
  isChannelMessage: boolean;
  streamId: number | null;
  topic: string;
  users: number[];
}

export interface DeletedBatch {
  /** How many messages the batch took, and the highest id among them (where the next starts). */
  taken: number;
  last: number | null;
}

/** Deletes the messages `selection` (a SELECT of message ids, with its LIMIT) names and queues
 * one bulk delete_message event per topic or direct conversation. One statement whatever the
 * batch holds: its user_message rows, reactions, submessages and attachment links go by ON
 * DELETE CASCADE, and who had the messages is read from the statement's snapshot, which still
 * shows them. Events name the rows the DELETE returned: a message deleted meanwhile by someone
 * else is not announced twice. */
export async function doDeleteMessageBatch(
  ctx: ActionContext,
  selection: Prisma.Sql,
): Promise<DeletedBatch> {
  const rows = await ctx.tx.$queryRaw<
    {
      taken: number;
      last: number | null;
      ids: number[] | null;
      is_channel_message: boolean | null;
      stream_id: number | null;
      topic: string | null;
      users: number[] | null;
    }[]
  >`
    WITH batch AS (${selection}), gone AS (
      DELETE FROM message m USING batch WHERE m.id = batch.id
      RETURNING m.id, m.recipient_id, m.subject, m.is_channel_message
    ), grouped AS (
      SELECT recipient_id, subject, is_channel_message, array_agg(id ORDER BY id) AS ids
      FROM gone GROUP BY recipient_id, subject, is_channel_message
    )
    SELECT b.taken, b.last, g.ids, g.is_channel_message, s.id AS stream_id, g.subject AS topic,
      ARRAY(SELECT DISTINCT um.user_profile_id FROM user_message um
            WHERE um.message_id = ANY(g.ids)) AS users
    FROM (SELECT count(*)::int AS taken, max(id) AS last FROM batch) b
    LEFT JOIN (grouped g LEFT JOIN stream s
               ON g.is_channel_message AND s.recipient_id = g.recipient_id) ON true`;
  // The statement always answers one row; it carries no group when nothing was deleted.
  const groups: DeletedGroup[] = rows
    .filter((row) => row.ids !== null)
    .map((row) => ({
      ids: row.ids!,
      isChannelMessage: row.is_channel_message!,
      streamId: row.stream_id,
      topic: row.topic!,
      users: row.users!,
    }));
  for (const group of groups) sendEventOnCommit(ctx, deleteMessagesEvent(group), group.users);
  // A channel whose first message went gets its oldest remaining one as first_message_id.
  const streamIds = [
    ...new Set(groups.flatMap((group) => (group.streamId === null ? [] : [group.streamId]))),
  ];
  if (streamIds.length > 0)
    for (const stream of await ctx.tx.$queryRaw<Stream[]>`
      SELECT ${Prisma.raw(columnsOf('Stream', 's'))} FROM stream s
      WHERE s.id = ANY(${streamIds}::int[]) AND s.first_message_id IS NOT NULL
        AND NOT EXISTS (SELECT FROM message m WHERE m.id = s.first_message_id)`)
      await refreshFirstMessageId(ctx, stream);
  return { taken: rows[0]!.taken, last: rows[0]!.last };
}

/** Zulip's bulk form: every id of one topic or one direct conversation, sorted. */
function deleteMessagesEvent(group: DeletedGroup): ZulipEvent {
  return {
    type: 'delete_message',
    message_ids: group.ids,
    message_type: group.isChannelMessage ? 'stream' : 'private',
    ...(group.isChannelMessage ? { stream_id: group.streamId, topic: group.topic } : {}),
  };
}
