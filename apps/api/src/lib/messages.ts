// Reading messages and deciding who may see them (Zulip's access_message and
// has_message_access), and turning rows into message objects for one viewer.
import {
  bitmaskToFlags,
  getPrisma,
  RecipientType,
  type Message,
  type Realm,
  type Stream,
  type Tx,
  type User,
} from '@parley/db';
import { JsonableError } from '@parley/errors';
import { topicLinks } from '@parley/markdown';
import {
  presentMessage,
  type DisplayRecipient,
  type DisplayRecipientUser,
} from '../presenters/messages';
import { linkifiersForRealm } from './linkifiers';
import { hasContentAccess, loadPermissions, subscriptionOf, type Permissions } from './streams';
import { canSeeDeliveryEmail, dummyEmail } from './users';

export class InvalidMessageError extends JsonableError {
  constructor() {
    super('Invalid message(s)');
  }
}

export interface AccessedMessage {
  message: Message;
  /** The viewer's flags bitmask, or null when the message is only in their history by
   * access to the channel (Zulip's "historical"). */
  flags: bigint | null;
  stream: Stream | null;
}

/** Zulip's access_message: the message if `user` may read it. "Invalid message(s)" also for
 * messages that exist but are not visible, so their ids are not revealed. */
export async function accessMessage(
  user: User,
  messageId: number,
  db: Tx = getPrisma(),
  { lock = false }: { lock?: boolean } = {},
): Promise<AccessedMessage> {
  // Edits and deletions lock the row first, so concurrent ones apply one after another.
  if (lock) await db.$queryRaw`SELECT id FROM message WHERE id = ${messageId} FOR UPDATE`;
  const message = await db.message.findFirst({ where: { id: messageId, realmId: user.realmId } });
  if (!message) throw new InvalidMessageError();
  const row = await db.userMessage.findUnique({
    where: { userId_messageId: { userId: user.id, messageId } },
    select: { flags: true },
  });
  if (!message.isChannelMessage) {
    if (!row) throw new InvalidMessageError();
    return { message, flags: row.flags, stream: null };
  }
  const stream = await db.stream.findFirst({ where: { recipientId: message.recipientId } });
  if (!stream) throw new InvalidMessageError();
  // Zulip's has_message_access: a copy of the message is not enough once the user can no
  // longer read the channel (unsubscribed from a private one, or a guest who left).
  const perms = await loadPermissions(user, db);
  const subscribed = (await subscriptionOf(user.id, stream, db)) !== null;
  if (!hasContentAccess(perms, stream, subscribed)) throw new InvalidMessageError();
  if (row) return { message, flags: row.flags, stream };
  if (!stream.historyPublicToSubscribers) throw new InvalidMessageError();
  return { message, flags: null, stream };
}

/** Zulip's has_message_access for messages the user did not receive: the channel shares its
 * history with subscribers and the user could read it (subscribed, or a public channel). */
export async function canReadChannelHistory(
  perms: Permissions,
  stream: Stream,
  db: Tx = getPrisma(),
): Promise<boolean> {
  if (!stream.historyPublicToSubscribers) return false;
  const subscribed = (await subscriptionOf(perms.user.id, stream, db)) !== null;
  return hasContentAccess(perms, stream, subscribed);
}

/** Internal flags never shown (Zulip's NON_API_FLAGS). */
const NON_API_FLAGS = new Set(['is_private', 'active_mobile_push_notification']);

/** A user's flags as the API shows them: without internal ones, with the deprecated
 * wildcard_mentioned alias; a message only in their history by channel access is
 * ["read", "historical"]. */
export function flagNames(flags: bigint | null): string[] {
  if (flags === null) return ['read', 'historical'];
  return apiFlags(bitmaskToFlags(flags));
}

export function apiFlags(flags: readonly string[]): string[] {
  const shown = flags.filter((flag) => !NON_API_FLAGS.has(flag));
  if (shown.includes('stream_wildcard_mentioned') || shown.includes('topic_wildcard_mentioned'))
    shown.push('wildcard_mentioned');
  return shown;
}

export interface PresentOptions {
  applyMarkdown: boolean;
  clientGravatar: boolean;
  allowEmptyTopicName: boolean;
}

/** Message objects for `viewer`, in the order given, with their flags. Loads senders,
 * channels and direct-message participants in a few queries. */
export async function presentMessages(
  viewer: User,
  realm: Realm,
  rows: { message: Message; flags: bigint | null }[],
  options: PresentOptions,
  db: Tx = getPrisma(),
): Promise<Record<string, unknown>[]> {
  const messages = rows.map((row) => row.message);
  const senders = await usersById(
    messages.map((m) => m.senderId),
    db,
  );
  const displayFor = await displayRecipients(viewer, realm, messages, db);
  const reactions = await db.reaction.findMany({
    where: { messageId: { in: messages.map((m) => m.id) } },
    orderBy: { id: 'asc' },
  });
  const linkifiers = await linkifiersForRealm(realm.id, db);
  return rows.map(({ message, flags }) => {
    const sender = senders.get(message.senderId)!;
    const recipient = displayFor(message);
    return presentMessage(message, realm, {
      sender,
      senderEmailVisible: canSeeDeliveryEmail(viewer, sender),
      displayRecipient: recipient.display,
      streamId: recipient.streamId,
      recipientId: recipient.recipientId,
      flags: flagNames(flags),
      ...options,
      topicLinks: topicLinks(message.subject, linkifiers),
      editHistoryPolicy: realm.editHistoryVisibilityPolicy,
      reactions: reactions
        .filter((r) => r.messageId === message.id)
        .map((r) => ({
          emoji_name: r.emojiName,
          emoji_code: r.emojiCode,
          reaction_type: r.reactionType,
          user_id: r.userId,
        })),
    });
  });
}

async function usersById(ids: number[], db: Tx): Promise<Map<number, User>> {
  const users = await db.user.findMany({ where: { id: { in: [...new Set(ids)] } } });
  return new Map(users.map((user) => [user.id, user]));
}

interface RecipientDisplay {
  display: DisplayRecipient;
  streamId: number | null;
  /** The conversation's recipient id for this viewer: an incoming 1:1 message shows the
   * sender's personal recipient, so both directions share one id (feature level 327). */
  recipientId: number;
}

/** display_recipient of each message: the channel's name, or the users of a direct message,
 * sender included, sorted by id (a 1:1 message's recipient row is the other user's; a group's
 * members are the subscribers of its recipient). */
export async function displayRecipients(
  viewer: Pick<User, 'id' | 'role'>,
  realm: Pick<Realm, 'stringId'>,
  messages: Pick<Message, 'recipientId' | 'senderId'>[],
  db: Tx = getPrisma(),
): Promise<(message: Pick<Message, 'recipientId' | 'senderId'>) => RecipientDisplay> {
  // Only 1:1 messages the viewer received have their sender's recipient looked up below.
  const recipientIds = [...new Set(messages.map((m) => m.recipientId))];
  const recipients = new Map(
    (await db.recipient.findMany({ where: { id: { in: recipientIds } } })).map((r) => [r.id, r]),
  );
  const all = [...recipients.values()];
  const streams = new Map(
    (
      await db.stream.findMany({
        where: {
          id: { in: all.filter((r) => r.type === RecipientType.STREAM).map((r) => r.typeId) },
        },
        select: { id: true, name: true },
      })
    ).map((s) => [s.id, s.name]),
  );
  const groupMembers = new Map<number, number[]>();
  const groups = all.filter((r) => r.type === RecipientType.DIRECT_MESSAGE_GROUP).map((r) => r.id);
  if (groups.length > 0) {
    for (const sub of await db.subscription.findMany({
      where: { recipientId: { in: groups } },
      select: { recipientId: true, userId: true },
    })) {
      groupMembers.set(sub.recipientId, [...(groupMembers.get(sub.recipientId) ?? []), sub.userId]);
    }
  }
  const participantsOf = (message: Pick<Message, 'recipientId' | 'senderId'>): number[] => {
    const recipient = recipients.get(message.recipientId)!;
    const ids =
      recipient.type === RecipientType.PERSONAL
        ? [recipient.typeId, message.senderId]
        : (groupMembers.get(recipient.id) ?? []);
    return [...new Set(ids)].sort((a, b) => a - b);
  };
  const incomingSenders = messages
    .filter((m) => {
      const recipient = recipients.get(m.recipientId)!;
      return (
        recipient.type === RecipientType.PERSONAL &&
        recipient.typeId === viewer.id &&
        m.senderId !== viewer.id
      );
    })
    .map((m) => m.senderId);
  const senderRecipients = new Map(
    (incomingSenders.length > 0
      ? await db.recipient.findMany({
          where: { type: RecipientType.PERSONAL, typeId: { in: [...new Set(incomingSenders)] } },
        })
      : []
    ).map((r) => [r.typeId, r.id]),
  );
  const people = await usersById(
    messages.flatMap((m) =>
      recipients.get(m.recipientId)!.type === RecipientType.STREAM ? [] : participantsOf(m),
    ),
    db,
  );
  return (message) => {
    const recipient = recipients.get(message.recipientId)!;
    if (recipient.type === RecipientType.STREAM)
      return {
        display: streams.get(recipient.typeId) ?? '',
        streamId: recipient.typeId,
        recipientId: recipient.id,
      };
    return {
      display: participantsOf(message).map((id) => displayUser(viewer, people.get(id)!, realm)),
      streamId: null,
      recipientId: senderRecipients.get(message.senderId) ?? recipient.id,
    };
  };
}

export function displayUser(
  viewer: Pick<User, 'id' | 'role'>,
  user: User,
  realm: Pick<Realm, 'stringId'>,
): DisplayRecipientUser {
  return {
    id: user.id,
    email: canSeeDeliveryEmail(viewer, user) ? user.deliveryEmail : dummyEmail(user, realm),
    full_name: user.fullName,
    is_mirror_dummy: user.isMirrorDummy,
  };
}

/** The forms of one message for its recipients' events: rendered HTML, the empty topic as ""
 * (the events tier substitutes the display name for clients without empty_topic_name), and
 * whether a client_gravatar queue may compute the avatar. */
export async function presentMessagesForEvent(
  db: Tx,
  realm: Realm,
  message: Message,
  viewers: Pick<User, 'id' | 'role'>[],
): Promise<
  (viewer: Pick<User, 'id' | 'role'>) => {
    message: Record<string, unknown>;
    avatarGravatar: boolean;
    /** Same key, same form: lets callers group viewers without serializing. */
    key: string;
  }
> {
  const sender = await db.user.findUniqueOrThrow({ where: { id: message.senderId } });
  const forms = new Map<
    string,
    { message: Record<string, unknown>; avatarGravatar: boolean; key: string }
  >();
  const displayByViewer = new Map<number, RecipientDisplay>();
  // A channel's name is the same for everyone; direct-message participants are few, and their
  // addresses depend on who looks.
  const links = topicLinks(message.subject, await linkifiersForRealm(realm.id, db));
  const shared = message.isChannelMessage
    ? (await displayRecipients(viewers[0] ?? sender, realm, [message], db))(message)
    : null;
  for (const viewer of viewers) {
    displayByViewer.set(
      viewer.id,
      shared ?? (await displayRecipients(viewer, realm, [message], db))(message),
    );
  }
  return (viewer) => {
    const visible = canSeeDeliveryEmail(viewer, sender);
    const display = displayByViewer.get(viewer.id)!;
    const key = `${visible}:${display.recipientId}:${JSON.stringify(display.display)}`;
    let form = forms.get(key);
    if (!form) {
      form = {
        message: presentMessage(message, realm, {
          sender,
          senderEmailVisible: visible,
          displayRecipient: display.display,
          streamId: display.streamId,
          recipientId: display.recipientId,
          flags: [],
          applyMarkdown: true,
          clientGravatar: false,
          allowEmptyTopicName: true,
          editHistoryPolicy: realm.editHistoryVisibilityPolicy,
          topicLinks: links,
        }),
        avatarGravatar: visible && sender.avatarSource === 'G',
        key,
      };
      // Flags travel beside the message in the event, not inside it.
      delete form.message.flags;
      forms.set(key, form);
    }
    return form;
  };
}
