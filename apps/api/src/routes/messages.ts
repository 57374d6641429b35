// Messages: POST /messages, GET /messages, GET/PATCH/DELETE /messages/{id},
// GET /messages/{id}/history, GET /messages/{id}/read_receipts, POST /messages/{id}/report,
// POST /messages/render, POST /submessage,
// GET /messages/matches_narrow.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { afterAnswer, runAction } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import { isForWelcomeBot, replyFromWelcomeBot } from '../actions/onboarding';
import {
  checkContent,
  checkEditWildcardMention,
  checkTopic,
  sendPreparedMessage,
  prepareMessage,
  type SendTarget,
} from '../actions/messages';
import {
  checkDeleteMessageById,
  checkUpdateMessage,
  doDeleteMessage,
  doUpdateMessage,
  PROPAGATE_MODES,
} from '../actions/message-edit';
import { doReportMessage } from '../actions/message-reports';
import { sendMoveNotices } from '../actions/move-notices';
import { MAX_REPORT_DESCRIPTION_LENGTH, REPORT_TYPE_KEYS } from '../lib/message-reports';
import { readReceipts } from '../lib/read-receipts';
import {
  checkAddReaction,
  checkRemoveReaction,
  doAddReaction,
  doRemoveReaction,
} from '../actions/reactions';
import { checkAddSubmessage, doAddSubmessage, MAX_SUBMESSAGE_LENGTH } from '../actions/submessages';
import { checkWidgetContent } from '../lib/widgets';
import { clientName, sentByHuman } from '../lib/clients';
import { editHistorySnapshots } from '../lib/edit-history';
import { fetchMessages, messagesMatchingNarrow } from '../lib/message-fetch';
import { accessMessage, InvalidMessageError, presentReadableMessage } from '../lib/messages';
import { narrowSchema, normalizeNarrow } from '../lib/narrow';
import { attachmentObject } from '../lib/attachments';
import { customEmojiFor } from '../lib/realm-emoji';
import { renderContent } from '../lib/rendering';
import { groupIdsOfUser } from '../lib/groups';
import { checkGroupMentionsAllowed } from '../lib/user-group-permissions';

export const messageRoutes = Router();

const messagePath = { message_id: p.int({ min: 0 }) };

defineRoute(messageRoutes, '/messages', {
  GET: userEndpoint(
    {
      params: {
        anchor: p.string({ maxLength: 30 }).optional(),
        include_anchor: p.bool().default(true),
        num_before: p.int({ min: 0 }).optional(),
        num_after: p.int({ min: 0 }).optional(),
        narrow: p.json(narrowSchema).default([]),
        client_gravatar: p.bool().default(true),
        apply_markdown: p.bool().default(true),
        use_first_unread_anchor: p.bool().default(false),
        message_ids: p
          .json(
            z.array(
              z
                .number()
                .int()
                .min(0)
                .max(2 ** 31 - 1),
            ),
          )
          .optional(),
        allow_empty_topic_name: p.bool().default(false),
      },
      response: z.object({
        messages: z.array(schema.message),
        // "newest" answers Zulip's LARGER_THAN_MAX_MESSAGE_ID (10^16, past the safe integers).
        anchor: z.number().optional(),
        found_anchor: z.boolean(),
        found_oldest: z.boolean(),
        found_newest: z.boolean(),
        history_limited: z.boolean(),
      }),
    },
    async ({ user, realm, params }) =>
      fetchMessages(user, realm, {
        anchor: params.anchor,
        useFirstUnreadAnchor: params.use_first_unread_anchor,
        includeAnchor: params.message_ids === undefined ? params.include_anchor : false,
        numBefore: params.num_before ?? 0,
        numAfter: params.num_after ?? 0,
        narrow: normalizeNarrow(params.narrow),
        messageIds: params.message_ids,
        // Zulip's get_messages_backend counts only non-zero numbers as a range (clients send
        // num_before=0&num_after=0 with message_ids).
        rangeGiven:
          (params.num_before ?? 0) > 0 ||
          (params.num_after ?? 0) > 0 ||
          params.anchor !== undefined ||
          params.use_first_unread_anchor,
        applyMarkdown: params.apply_markdown,
        clientGravatar: params.client_gravatar,
        allowEmptyTopicName: params.allow_empty_topic_name,
      }),
  ),
  POST: userEndpoint(
    {
      params: {
        type: p.enum(['stream', 'channel', 'private', 'direct']),
        to: p.string().optional(),
        content: p.string(),
        topic: p.string().alias('subject').optional(),
        queue_id: p.string({ maxLength: 100 }).optional(),
        local_id: p.string({ maxLength: 100 }).optional(),
        read_by_sender: p.bool().optional(),
        // JSON text describing a widget (Zulip's check_widget_content).
        widget_content: p.string({ maxLength: MAX_SUBMESSAGE_LENGTH }).optional(),
      },
      response: z.object({ id: schema.id, automatic_new_visibility_policy: z.int().optional() }),
    },
    async ({ req, user, realm, params }) => {
      const content = checkContent(params.content);
      const widgetContent =
        params.widget_content === undefined ? undefined : checkWidgetContent(params.widget_content);
      const client = clientName(req, undefined);
      const isChannel = params.type === 'stream' || params.type === 'channel';
      let target: SendTarget;
      if (isChannel) {
        // A bot's default channel stands in for a missing one (Zulip's Addressee.legacy_build).
        const to =
          params.to ??
          (user.defaultSendingStreamId === null ? undefined : String(user.defaultSendingStreamId));
        if (to === undefined) throw new JsonableError('Missing channel');
        if (params.topic === undefined) throw new JsonableError('Missing topic');
        target = { kind: 'channel', to, topic: checkTopic(params.topic) };
      } else {
        if (params.to === undefined) throw new JsonableError('Message must have recipients');
        target = { kind: 'direct', to: params.to };
      }
      // Reads and decisions first; then only writes (most often a single statement).
      const prepared = await prepareMessage(realm, user, target, content, {
        client,
        readBySender: params.read_by_sender ?? sentByHuman(client),
        ...(widgetContent ? { widgetContent } : {}),
        ...(params.queue_id !== undefined && params.local_id !== undefined
          ? { localEcho: { queueId: params.queue_id, localId: params.local_id } }
          : {}),
      });
      const sent = await sendPreparedMessage(prepared);
      if (isForWelcomeBot(prepared)) afterAnswer(() => replyFromWelcomeBot(prepared));
      return {
        id: sent.message.id,
        ...(sent.automaticPolicy !== null
          ? { automatic_new_visibility_policy: sent.automaticPolicy }
          : {}),
      };
    },
  ),
});

// Before /messages/:message_id, which would take "matches_narrow" for an id.
defineRoute(messageRoutes, '/messages/matches_narrow', {
  GET: userEndpoint(
    {
      params: {
        msg_ids: p.json(
          z
            .array(
              z
                .number()
                .int()
                .min(0)
                .max(2 ** 31 - 1),
            )
            .max(5000),
        ),
        narrow: p.json(narrowSchema),
      },
      response: z.object({
        messages: z.record(
          z.string(),
          z.object({ match_content: z.string(), match_subject: z.string() }),
        ),
      }),
    },
    async ({ user, realm, params }) => ({
      messages: await messagesMatchingNarrow(
        user,
        realm,
        params.msg_ids,
        normalizeNarrow(params.narrow),
      ),
    }),
  ),
});

defineRoute(messageRoutes, '/messages/render', {
  // Rendering runs on the event loop: previews are bounded like messages (ten times over).
  POST: userEndpoint(
    {
      params: { content: p.string({ maxLength: 100_000 }) },
      response: z.object({ rendered: z.string() }),
    },
    async ({ user, realm, params }) => ({
      rendered: (await renderContent(realm.id, params.content, undefined, { realm, user })).html,
    }),
  ),
});

const reactionParams = {
  emoji_name: p.string({ maxLength: 100 }).optional(),
  emoji_code: p.string({ maxLength: 100 }).optional(),
  reaction_type: p.string({ maxLength: 30 }).optional(),
};

/** A reaction request's emoji, as sent (checked by checkAddReaction / checkRemoveReaction). */
const reactionRequest = (params: {
  emoji_name?: string;
  emoji_code?: string;
  reaction_type?: string;
}) => ({ name: params.emoji_name, code: params.emoji_code, type: params.reaction_type });

defineRoute(messageRoutes, '/messages/:message_id/reactions', {
  // Zulip's order: the message (not in an archived channel), then the emoji.
  POST: userEndpoint(
    {
      path: messagePath,
      params: { ...reactionParams, emoji_name: p.string({ maxLength: 100 }) },
      response: schema.empty,
    },
    async ({ user, realm, path, params }) => {
      await runAction(async (ctx) => {
        const { message, flags, stream } = await accessMessage(user, path.message_id, ctx.tx);
        if (stream?.deactivated) throw new InvalidMessageError();
        const custom = await customEmojiFor(
          user.realmId,
          params.emoji_name,
          params.emoji_code,
          ctx.tx,
        );
        const request = { ...reactionRequest(params), name: params.emoji_name };
        const emoji = await checkAddReaction(ctx.tx, user, message, request, custom);
        await doAddReaction(ctx, realm, user, message, stream, flags !== null, emoji);
      });
      return {};
    },
  ),
  DELETE: userEndpoint(
    { path: messagePath, params: reactionParams, response: schema.empty },
    async ({ user, realm, path, params }) => {
      await runAction(async (ctx) => {
        const { message, stream } = await accessMessage(user, path.message_id, ctx.tx);
        if (stream?.deactivated) throw new InvalidMessageError();
        const custom = await customEmojiFor(
          user.realmId,
          params.emoji_name,
          params.emoji_code,
          ctx.tx,
        );
        const emoji = checkRemoveReaction(reactionRequest(params), custom);
        await doRemoveReaction(ctx, realm, user, message, stream, emoji);
      });
      return {};
    },
  ),
});

// Zulip's process_submessage: votes, options and tasks of a message's widget.
defineRoute(messageRoutes, '/submessage', {
  POST: userEndpoint(
    {
      params: {
        message_id: p.int({ min: 0 }),
        msg_type: p.string({ maxLength: 100 }),
        content: p.string({ maxLength: MAX_SUBMESSAGE_LENGTH }),
      },
      response: schema.empty,
    },
    async ({ user, params }) => {
      await runAction(async (ctx) => {
        const accessed = await accessMessage(user, params.message_id, ctx.tx, { lock: true });
        await checkAddSubmessage(user, accessed, params.content);
        const { message, stream } = accessed;
        await doAddSubmessage(ctx, user, message, stream, params.msg_type, params.content);
      });
      return {};
    },
  ),
});

// Zulip's read_receipts: who has read the message, when the organization shows it.
defineRoute(messageRoutes, '/messages/:message_id/read_receipts', {
  GET: userEndpoint(
    { path: messagePath, response: z.object({ user_ids: z.array(schema.id) }) },
    async ({ user, realm, path }) => {
      const { message } = await accessMessage(user, path.message_id);
      if (!realm.enableReadReceipts)
        throw new JsonableError('Read receipts are disabled in this organization.');
      return { user_ids: await readReceipts(message, user.id) };
    },
  ),
});

// Zulip's report_message_backend (feature level 382): the report goes to the organization's
// moderation request channel.
defineRoute(messageRoutes, '/messages/:message_id/report', {
  POST: userEndpoint(
    {
      path: messagePath,
      params: {
        report_type: p.enum(REPORT_TYPE_KEYS),
        description: p.string({ maxLength: MAX_REPORT_DESCRIPTION_LENGTH }).default(''),
      },
      response: schema.empty,
    },
    async ({ user, realm, path, params }) => {
      await doReportMessage(realm, user, path.message_id, params.report_type, params.description);
      return {};
    },
  ),
});

defineRoute(messageRoutes, '/messages/:message_id/history', {
  GET: userEndpoint(
    {
      path: messagePath,
      params: { allow_empty_topic_name: p.bool().default(false) },
      response: z.object({
        message_history: z.array(
          z.object({
            user_id: schema.id.nullable(),
            timestamp: schema.timestamp,
            topic: z.string(),
            prev_topic: z.string().optional(),
            stream: schema.id.optional(),
            prev_stream: schema.id.optional(),
            content: z.string(),
            rendered_content: z.string(),
            prev_content: z.string().optional(),
            prev_rendered_content: z.string().optional(),
            content_html_diff: z.string().optional(),
          }),
        ),
      }),
    },
    async ({ user, realm, path, params }) => {
      if (realm.editHistoryVisibilityPolicy >= 3)
        throw new JsonableError('Message edit history is disabled in this organization');
      const { message } = await accessMessage(user, path.message_id);
      return {
        message_history: editHistorySnapshots(
          message,
          realm.editHistoryVisibilityPolicy,
          params.allow_empty_topic_name,
        ),
      };
    },
  ),
});

defineRoute(messageRoutes, '/messages/:message_id', {
  GET: userEndpoint(
    {
      path: messagePath,
      params: {
        apply_markdown: p.bool().default(true),
        allow_empty_topic_name: p.bool().default(false),
      },
      response: z.object({ message: schema.message, raw_content: z.string() }),
    },
    async ({ user, realm, path, params }) => {
      const presented = await presentReadableMessage(user, realm, path.message_id, {
        applyMarkdown: params.apply_markdown,
        // Zulip hard-codes client_gravatar here.
        clientGravatar: true,
        allowEmptyTopicName: params.allow_empty_topic_name,
      });
      return { message: presented.object, raw_content: presented.message.content };
    },
  ),
  PATCH: userEndpoint(
    {
      path: messagePath,
      params: {
        content: p.string().optional(),
        topic: p.string().alias('subject').optional(),
        stream_id: p.int({ min: 1 }).optional(),
        propagate_mode: p.enum(PROPAGATE_MODES).default('change_one'),
        send_notification_to_old_thread: p.bool().default(false),
        send_notification_to_new_thread: p.bool().default(true),
        prev_content_sha256: p.string().optional(),
      },
      response: z.object({ detached_uploads: z.array(schema.attachment) }),
    },
    async ({ user, realm, path, params }) => {
      const detached = await runAction(async (ctx) => {
        const { tx } = ctx;
        const { message, stream } = await accessMessage(user, path.message_id, tx, { lock: true });
        const edit = await checkUpdateMessage(tx, user, realm, message, stream, {
          content: params.content,
          topic: params.topic,
          streamId: params.stream_id,
          propagateMode: params.propagate_mode,
          prevContentSha256: params.prev_content_sha256,
        });
        const rendered =
          edit.content === undefined
            ? null
            : // Only the sender edits content: their mentions are resolved as at sending.
              await renderContent(realm.id, edit.content, tx, { realm, user });
        if (rendered && message.isChannelMessage && rendered.mentions.wildcard !== null)
          await checkEditWildcardMention(realm, await groupIdsOfUser(user.id), rendered, {
            recipientId: message.recipientId,
            topic: message.subject,
          });
        if (rendered && rendered.mentions.groupIds.size > 0)
          await checkGroupMentionsAllowed(
            user,
            await groupIdsOfUser(user.id),
            rendered.mentions.groupIds,
          );
        const updated = await doUpdateMessage(ctx, user, edit, rendered);
        await sendMoveNotices(ctx, user, realm, edit, updated, {
          toOldThread: params.send_notification_to_old_thread,
          toNewThread: params.send_notification_to_new_thread,
        });
        return updated.detached;
      });
      return {
        detached_uploads: await Promise.all(
          detached.map((attachment) => attachmentObject(attachment)),
        ),
      };
    },
  ),
  DELETE: userEndpoint(
    { path: messagePath, response: schema.empty },
    async ({ user, realm, path }) => {
      await runAction(async (ctx) => {
        const { message, stream } = await checkDeleteMessageById(ctx, user, realm, path.message_id);
        await doDeleteMessage(ctx, user, message, stream);
      });
      return {};
    },
  ),
});
