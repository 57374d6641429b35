// Personal message flags: POST /messages/flags (spec 4.17), POST /messages/flags/narrow,
// POST /mark_all_as_read, /mark_stream_as_read, /mark_topic_as_read.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  checkFlagRequest,
  doMarkAllAsRead,
  doMarkChannelAsRead,
  doMarkTopicAsRead,
  doUpdateMessageFlags,
} from '../actions/flags';
import { fetchMessages } from '../lib/message-fetch';
import { narrowSchema, normalizeNarrow } from '../lib/narrow';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../presenters/messages';

export const flagRoutes = Router();

const MAX_FLAG_MESSAGES = 10_000;
const messageIds = p.json(
  z
    .array(
      z
        .number()
        .int()
        .min(0)
        .max(2 ** 31 - 1),
    )
    .max(MAX_FLAG_MESSAGES),
);

defineRoute(flagRoutes, '/messages/flags', {
  POST: userEndpoint(
    {
      params: { messages: messageIds, op: p.string(), flag: p.string() },
      response: z.object({
        messages: schema.ids,
        ignored_because_not_subscribed_channels: schema.ids.optional(),
      }),
    },
    async ({ user, realm, params }) => {
      const [flag, op] = checkFlagRequest(params.flag, params.op);
      const result = await runAction((ctx) =>
        doUpdateMessageFlags(ctx, user, realm, op, flag, params.messages),
      );
      return {
        messages: result.messages,
        ...(result.ignoredChannels
          ? { ignored_because_not_subscribed_channels: result.ignoredChannels }
          : {}),
      };
    },
  ),
});

/** Zulip's MAX_MESSAGES_PER_UPDATE: one request's window, so that its transaction stays small. */
const MAX_MESSAGES_PER_UPDATE = 5000;

/** The window a flags-by-narrow request may cover: "the server may decrease" num_before and
 * num_after (Zulip clamps rather than refuses), keeping at least half for num_before. */
function clampedRange(before: number, after: number): { numBefore: number; numAfter: number } {
  const numBefore = Math.min(
    before,
    Math.max(MAX_MESSAGES_PER_UPDATE - after, MAX_MESSAGES_PER_UPDATE / 2),
  );
  return { numBefore, numAfter: Math.min(after, MAX_MESSAGES_PER_UPDATE - numBefore) };
}

defineRoute(flagRoutes, '/messages/flags/narrow', {
  POST: userEndpoint(
    {
      params: {
        anchor: p.string({ maxLength: 30 }),
        include_anchor: p.bool().default(true),
        num_before: p.int({ min: 0 }),
        num_after: p.int({ min: 0 }),
        narrow: p.json(narrowSchema),
        op: p.string(),
        flag: p.string(),
      },
      response: z.object({
        processed_count: z.int(),
        updated_count: z.int(),
        first_processed_id: schema.id.nullable(),
        last_processed_id: schema.id.nullable(),
        found_oldest: z.boolean(),
        found_newest: z.boolean(),
        ignored_because_not_subscribed_channels: schema.ids.optional(),
      }),
    },
    async ({ user, realm, params }) => {
      const [flag, op] = checkFlagRequest(params.flag, params.op);
      const { numBefore, numAfter } = clampedRange(params.num_before, params.num_after);
      const window = await fetchMessages(user, realm, {
        anchor: params.anchor,
        useFirstUnreadAnchor: false,
        includeAnchor: params.include_anchor,
        numBefore,
        numAfter,
        narrow: normalizeNarrow(params.narrow),
        messageIds: undefined,
        rangeGiven: true,
        applyMarkdown: false,
        clientGravatar: true,
        allowEmptyTopicName: true,
      });
      const ids = (window.messages as { id: number }[]).map((m) => m.id);
      const result = await runAction((ctx) =>
        doUpdateMessageFlags(ctx, user, realm, op, flag, ids),
      );
      return {
        processed_count: ids.length,
        updated_count: result.messages.length,
        first_processed_id: ids[0] ?? null,
        last_processed_id: ids[ids.length - 1] ?? null,
        found_oldest: window.found_oldest,
        found_newest: window.found_newest,
        ...(result.ignoredChannels
          ? { ignored_because_not_subscribed_channels: result.ignoredChannels }
          : {}),
      };
    },
  ),
});

defineRoute(flagRoutes, '/mark_all_as_read', {
  POST: userEndpoint({ response: z.object({ complete: z.boolean() }) }, async ({ user }) => {
    await runAction((ctx) => doMarkAllAsRead(ctx, user));
    return { complete: true };
  }),
});

defineRoute(flagRoutes, '/mark_stream_as_read', {
  POST: userEndpoint(
    { params: { stream_id: p.int({ min: 1 }) }, response: schema.empty },
    async ({ user, realm, params }) => {
      await runAction((ctx) => doMarkChannelAsRead(ctx, user, realm, params.stream_id));
      return {};
    },
  ),
});

defineRoute(flagRoutes, '/mark_topic_as_read', {
  POST: userEndpoint(
    {
      params: { stream_id: p.int({ min: 1 }), topic_name: p.string({ maxLength: 60 }) },
      response: schema.empty,
    },
    async ({ user, realm, params }) => {
      const topic = params.topic_name === EMPTY_TOPIC_DISPLAY_NAME ? '' : params.topic_name;
      await runAction((ctx) =>
        doMarkTopicAsRead(ctx, user, realm, params.stream_id, topic, params.topic_name),
      );
      return {};
    },
  ),
});
