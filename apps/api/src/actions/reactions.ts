// Emoji reactions (spec 4.15, Zulip's check_add_reaction / do_remove_reaction): validated
// against the Unicode emoji data and Zulip's extra emoji, one per user and emoji, told to
// everyone who can see the message.
import {
  flagsToBitmask,
  isUniqueViolation,
  type ActionContext,
  type Message,
  type Realm,
  type Stream,
  type Tx,
  type User,
} from '@parley/db';
import { JsonableError, ReactionDoesNotExistError, ReactionExistsError } from '@parley/errors';
import { canonicalEmojiName, emojiCodeForName, isEmojiCode } from '@parley/markdown';
import { sendEventOnCommit } from '../lib/events';
import { messageAudience } from '../lib/messages';
import { dummyEmail, EmailVisibility } from '../lib/users';
import { doAutoFollowOnParticipation } from './user-topics';

export const REACTION_TYPES = ['unicode_emoji', 'realm_emoji', 'zulip_extra_emoji'] as const;
export type ReactionType = (typeof REACTION_TYPES)[number];

export interface Emoji {
  name: string;
  code: string;
  type: ReactionType;
}

export interface CustomEmoji {
  id: number;
  name: string;
  deactivated: boolean;
}

/** Zulip's get_emoji_data and check_emoji_request: a name alone means the active custom
 * emoji of that name, else Zulip's own, else the Unicode one. A deactivated custom emoji can
 * still be removed from messages, but not added. */
export function checkEmoji(
  name: string | undefined,
  code: string | undefined,
  type: ReactionType | undefined,
  customEmoji: readonly CustomEmoji[],
  adding: boolean,
): Emoji {
  const activeByName =
    name === undefined
      ? undefined
      : customEmoji.find((emoji) => emoji.name === name && !emoji.deactivated);
  const reactionType =
    type ??
    (activeByName ? 'realm_emoji' : name === 'zulip' ? 'zulip_extra_emoji' : 'unicode_emoji');
  if (reactionType === 'realm_emoji') {
    const emoji =
      code === undefined ? activeByName : customEmoji.find((e) => String(e.id) === code);
    if (!emoji) throw new JsonableError('Invalid custom emoji.');
    if (name !== undefined && emoji.name !== name)
      throw new JsonableError('Invalid custom emoji name.');
    if (adding && emoji.deactivated)
      throw new JsonableError('This custom emoji has been deactivated.');
    return { name: emoji.name, code: String(emoji.id), type: reactionType };
  }
  if (reactionType === 'zulip_extra_emoji') {
    if ((code ?? 'zulip') !== 'zulip' || (name ?? 'zulip') !== 'zulip')
      throw new JsonableError('Invalid emoji code.');
    return { name: 'zulip', code: 'zulip', type: reactionType };
  }
  // Adding looks the name up whenever the code or the type is missing (so an unknown name
  // fails even beside a code); removing only when the code is.
  const dataCode =
    code === undefined || (adding && type === undefined) ? emojiDataCode(name, activeByName) : code;
  const unicodeCode = code ?? dataCode;
  if (adding) checkUnicodeEmoji(name, unicodeCode);
  // The name as sent is kept, so an alias (thumbs_up) stays that alias.
  return {
    name: name ?? canonicalEmojiName(unicodeCode) ?? unicodeCode,
    code: unicodeCode,
    type: reactionType,
  };
}

/** Zulip's get_emoji_data for a name that is neither Zulip's own emoji nor typed as custom:
 * an active custom emoji still shadows the Unicode name (its id then fails as a Unicode code),
 * and any Zulip emoji name, canonical or alias, is known. */
function emojiDataCode(name: string | undefined, activeByName: CustomEmoji | undefined): string {
  if (activeByName) return String(activeByName.id);
  const code = name === undefined ? undefined : emojiCodeForName(name);
  if (code === undefined) throw new JsonableError(`Emoji '${name ?? ''}' does not exist`);
  return code;
}

/** Zulip's check_emoji_request for unicode_emoji: the code must be one Zulip names (lowercase,
 * without U+FE0F), and the name one of that code's names. Removing skips this: the row, if
 * any, was valid when it was added. */
function checkUnicodeEmoji(name: string | undefined, code: string): void {
  if (!isEmojiCode(code)) throw new JsonableError('Invalid emoji code.');
  if (name === undefined || emojiCodeForName(name) !== code)
    throw new JsonableError('Invalid emoji name.');
}

/** Zulip's get_emoji_data: what an emoji name means in the organization now (an active
 * custom emoji, Zulip's own, then the Unicode names and aliases). */
function emojiDataFor(
  name: string,
  customEmoji: readonly CustomEmoji[],
): { code: string; type: ReactionType } {
  const custom = customEmoji.find((emoji) => emoji.name === name && !emoji.deactivated);
  if (custom) return { code: String(custom.id), type: 'realm_emoji' };
  if (name === 'zulip') return { code: 'zulip', type: 'zulip_extra_emoji' };
  const code = emojiCodeForName(name);
  if (code === undefined) throw new JsonableError(`Emoji '${name}' does not exist`);
  return { code, type: 'unicode_emoji' };
}

/** Zulip's check_emoji_request: whether a new reaction may use this emoji. */
function checkEmojiRequest(
  name: string,
  code: string,
  type: string,
  customEmoji: readonly CustomEmoji[],
): void {
  if (type === 'realm_emoji') {
    const emoji = customEmoji.find((e) => String(e.id) === code);
    if (!emoji) throw new JsonableError('Invalid custom emoji.');
    if (emoji.name !== name) throw new JsonableError('Invalid custom emoji name.');
    if (emoji.deactivated) throw new JsonableError('This custom emoji has been deactivated.');
  } else if (type === 'zulip_extra_emoji') {
    if (code !== 'zulip') throw new JsonableError('Invalid emoji code.');
    if (name !== code) throw new JsonableError('Invalid emoji name.');
  } else if (type === 'unicode_emoji') {
    checkUnicodeEmoji(name, code);
  } else throw new JsonableError('Invalid emoji type.');
}

export interface ReactionRequest {
  name?: string;
  code?: string;
  type?: string;
}

/** Zulip's check_add_reaction, after the message's access: whichever of the code and type is
 * missing comes from the name (which must then exist); joining someone else's reaction is a
 * vote for it, under its name and without checking the emoji again (it may be a custom emoji
 * deactivated since); only a new reaction's emoji is checked. */
export async function checkAddReaction(
  tx: Tx,
  user: User,
  message: Message,
  request: ReactionRequest & { name: string },
  customEmoji: readonly CustomEmoji[],
): Promise<Emoji> {
  const data =
    request.code === undefined || request.type === undefined
      ? emojiDataFor(request.name, customEmoji)
      : null;
  const code = request.code ?? data!.code;
  const type = request.type ?? data!.type;
  const same = await tx.reaction.findMany({
    where: { messageId: message.id, emojiCode: code, reactionType: type },
    orderBy: { id: 'asc' },
    select: { userId: true, emojiName: true },
  });
  if (same.some((reaction) => reaction.userId === user.id)) throw new ReactionExistsError();
  if (!same[0]) checkEmojiRequest(request.name, code, type, customEmoji);
  return { name: same[0]?.emojiName ?? request.name, code, type: type as ReactionType };
}

/** Zulip's remove_reaction: the code from the name when missing, the type unicode_emoji when
 * missing, and no check of the emoji (the reaction was valid when it was added). */
export function checkRemoveReaction(
  request: ReactionRequest,
  customEmoji: readonly CustomEmoji[],
): { code: string; type: string } {
  let code = request.code;
  if (code === undefined) {
    if (request.name === undefined)
      throw new JsonableError(
        'At least one of the following arguments must be present: emoji_name, emoji_code',
      );
    code = emojiDataFor(request.name, customEmoji).code;
  }
  return { code, type: request.type ?? 'unicode_emoji' };
}

/** Zulip's UserProfile.email, which the deprecated `user` object carries: the real address
 * only when the user shows it to everyone, else the dummy one (the same for every viewer). */
function publicEmail(user: User, realm: Pick<Realm, 'stringId'>): string {
  return user.emailAddressVisibility === EmailVisibility.EVERYONE
    ? user.deliveryEmail
    : dummyEmail(user, realm);
}

function reactionEvent(
  op: 'add' | 'remove',
  user: User,
  email: string,
  message: Message,
  emoji: Emoji,
) {
  return {
    type: 'reaction',
    op,
    message_id: message.id,
    emoji_name: emoji.name,
    emoji_code: emoji.code,
    reaction_type: emoji.type,
    user_id: user.id,
    // Deprecated, kept for older mobile clients (feature level 339).
    user: { user_id: user.id, email, full_name: user.fullName },
  };
}

export async function doAddReaction(
  ctx: ActionContext,
  realm: Pick<Realm, 'stringId'>,
  user: User,
  message: Message,
  stream: Stream | null,
  hasCopy: boolean,
  emoji: Emoji,
): Promise<void> {
  const { tx } = ctx;
  const same = await tx.reaction.findMany({
    where: { messageId: message.id, emojiCode: emoji.code, reactionType: emoji.type },
    orderBy: { id: 'asc' },
    select: { userId: true, emojiName: true },
  });
  if (same.some((reaction) => reaction.userId === user.id)) throw new ReactionExistsError();
  // As in Zulip, joining someone else's reaction is a vote for it and takes that reaction's
  // name, so one image never shows under two names (+1 and thumbs_up) on a message.
  const stored: Emoji = same[0] ? { ...emoji, name: same[0].emojiName } : emoji;
  // Reacting to a message only in the user's history gives them a (historical) copy.
  if (!hasCopy)
    await tx.userMessage.createMany({
      data: [
        { userId: user.id, messageId: message.id, flags: flagsToBitmask(['read', 'historical']) },
      ],
      skipDuplicates: true,
    });
  await tx.reaction
    .create({
      data: {
        messageId: message.id,
        userId: user.id,
        emojiName: stored.name,
        emojiCode: stored.code,
        reactionType: stored.type,
      },
    })
    .catch((error: unknown) => {
      throw isUniqueViolation(error) ? new ReactionExistsError() : error;
    });
  // Reacting is participating in the topic (before the reaction's event, as in Zulip).
  await doAutoFollowOnParticipation(ctx, user, message, stream);
  sendEventOnCommit(
    ctx,
    reactionEvent('add', user, publicEmail(user, realm), message, stored),
    await messageAudience(message, stream),
  );
}

/** Removes the user's reaction; the event names it as stored. */
export async function doRemoveReaction(
  ctx: ActionContext,
  realm: Pick<Realm, 'stringId'>,
  user: User,
  message: Message,
  stream: Stream | null,
  { code, type }: { code: string; type: string },
): Promise<void> {
  const [removed] = await ctx.tx.$queryRaw<{ emoji_name: string }[]>`
    DELETE FROM reaction
    WHERE message_id = ${message.id} AND user_profile_id = ${user.id}
      AND emoji_code = ${code} AND reaction_type = ${type}
    RETURNING emoji_name`;
  if (!removed) throw new ReactionDoesNotExistError();
  sendEventOnCommit(
    ctx,
    reactionEvent('remove', user, publicEmail(user, realm), message, {
      name: removed.emoji_name,
      code,
      type: type as ReactionType,
    }),
    await messageAudience(message, stream),
  );
}
