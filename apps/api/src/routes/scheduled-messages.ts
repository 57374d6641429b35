// Scheduled messages (spec 2.6, 4.3): GET and POST /scheduled_messages, PATCH and DELETE
// /scheduled_messages/{scheduled_message_id}; reminders: GET and POST /reminders, DELETE
// /reminders/{reminder_id}.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  checkCreateReminder,
  checkDeliveryTime,
  checkEditScheduledMessage,
  checkScheduleMessage,
  doDeleteReminder,
  doDeleteScheduledMessage,
} from '../actions/scheduled-messages';
import { clientName, sentByHuman } from '../lib/clients';
import {
  MAX_TIMESTAMP,
  readTarget,
  remindersOf,
  scheduledMessagesOf,
} from '../lib/scheduled-messages';
import { presentReminder, presentScheduledMessage } from '../presenters/scheduled-messages';

export const scheduledMessageRoutes = Router();

const MESSAGE_TYPES = ['direct', 'channel', 'stream', 'private'] as const;
type MessageType = (typeof MESSAGE_TYPES)[number];

/** "direct" and "private", "channel" and "stream" mean the same (feature level 248). */
const recipientType = (type: MessageType) =>
  type === 'direct' || type === 'private' ? ('private' as const) : ('stream' as const);

/** Any integer a client may send: whether it is in the future is checked next. */
const timestamp = () => p.int({ min: -MAX_TIMESTAMP, max: MAX_TIMESTAMP });

defineRoute(scheduledMessageRoutes, '/scheduled_messages', {
  GET: userEndpoint(
    { response: z.object({ scheduled_messages: z.array(schema.scheduledMessage) }) },
    async ({ user }) => ({
      scheduled_messages: (await scheduledMessagesOf(user.id)).map(presentScheduledMessage),
    }),
  ),
  POST: userEndpoint(
    {
      params: {
        type: p.enum(MESSAGE_TYPES),
        to: p.string(),
        content: p.string(),
        topic: p.string().alias('subject').optional(),
        scheduled_delivery_timestamp: timestamp(),
        read_by_sender: p.bool().optional(),
      },
      response: z.object({ scheduled_message_id: schema.id }),
    },
    async ({ req, user, realm, params }) => {
      const type = recipientType(params.type);
      const deliverAt = checkDeliveryTime(params.scheduled_delivery_timestamp);
      // The recipient is read first, as Zulip's extract_stream_id precedes its topic check.
      const target = readTarget(type, params.to, params.topic ?? '');
      if (type === 'stream' && params.topic === undefined) throw new JsonableError('Missing topic');
      const client = clientName(req, undefined);
      const id = await checkScheduleMessage(
        realm,
        user,
        {
          target,
          content: params.content,
          deliverAt,
          readBySender: params.read_by_sender,
          client,
        },
        sentByHuman(client),
      );
      return { scheduled_message_id: id };
    },
  ),
});

defineRoute(scheduledMessageRoutes, '/scheduled_messages/:scheduled_message_id', {
  PATCH: userEndpoint(
    {
      path: { scheduled_message_id: p.int({ min: 0 }) },
      params: {
        type: p.enum(MESSAGE_TYPES).optional(),
        to: p.string().optional(),
        content: p.string().optional(),
        topic: p.string().alias('subject').optional(),
        scheduled_delivery_timestamp: timestamp().optional(),
      },
      response: schema.empty,
    },
    async ({ req, user, realm, path, params }) => {
      const { type, to, content, topic, scheduled_delivery_timestamp: seconds } = params;
      if ([type, to, content, topic, seconds].every((value) => value === undefined))
        throw new JsonableError('Nothing to change');
      const newType = type === undefined ? undefined : recipientType(type);
      if (newType !== undefined && to === undefined)
        throw new JsonableError('Recipient required when updating type of scheduled message.');
      if (newType === 'stream' && topic === undefined)
        throw new JsonableError('Topic required when updating scheduled message type to channel.');
      const deliverAt = seconds === undefined ? undefined : checkDeliveryTime(seconds);
      const client = clientName(req, undefined);
      await runAction((ctx) =>
        checkEditScheduledMessage(
          ctx,
          user,
          realm,
          path.scheduled_message_id,
          { type: newType, to, topic, content, deliverAt, client },
          sentByHuman(client),
        ),
      );
      return {};
    },
  ),
  DELETE: userEndpoint(
    { path: { scheduled_message_id: p.int({ min: 0 }) }, response: schema.empty },
    async ({ user, path }) => {
      await runAction((ctx) => doDeleteScheduledMessage(ctx, user, path.scheduled_message_id));
      return {};
    },
  ),
});

defineRoute(scheduledMessageRoutes, '/reminders', {
  GET: userEndpoint(
    { response: z.object({ reminders: z.array(schema.reminder) }) },
    async ({ user }) => ({
      reminders: (await remindersOf(user.id)).map(presentReminder),
    }),
  ),
  POST: userEndpoint(
    {
      params: {
        message_id: p.int({ min: 0 }),
        scheduled_delivery_timestamp: timestamp(),
        note: p.string().optional(),
      },
      response: z.object({ reminder_id: schema.id }),
    },
    async ({ req, user, realm, params }) => {
      const deliverAt = checkDeliveryTime(params.scheduled_delivery_timestamp);
      const id = await checkCreateReminder(realm, user, {
        messageId: params.message_id,
        deliverAt,
        note: params.note,
        client: clientName(req, undefined),
      });
      return { reminder_id: id };
    },
  ),
});

defineRoute(scheduledMessageRoutes, '/reminders/:reminder_id', {
  DELETE: userEndpoint(
    { path: { reminder_id: p.int({ min: 0 }) }, response: schema.empty },
    async ({ user, path }) => {
      await runAction((ctx) => doDeleteReminder(ctx, user, path.reminder_id));
      return {};
    },
  ),
});
