// Setting a person's status (POST /users/me/status, and POST /users/{id}/status for
// administrators; Zulip's update_user_status_backend and do_update_user_status): only the
// parts a request names change, and everyone who can see the person is told which.
import type { ActionContext, Realm, User } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { sendEventOnCommit } from '../lib/events';
import { customEmojiFor } from '../lib/realm-emoji';
import { codePoints } from '../lib/text';
import { usersWhoCanAccess } from '../lib/users';
import { doSetPresenceEnabled } from './presence';
import { checkEmoji, REACTION_TYPES, type ReactionType } from './reactions';

/** Zulip's limit on status_text, counted after trimming. */
export const MAX_STATUS_TEXT_LENGTH = 60;

export interface StatusRequest {
  away?: boolean;
  status_text?: string;
  emoji_name?: string;
  emoji_code?: string;
  reaction_type?: string;
}

/** The parts to change, checked. An emoji named without its code or type gets them from the
 * name (custom emoji first, as for reactions); an empty name clears the emoji. */
export interface StatusChange {
  away?: boolean;
  statusText?: string;
  emoji?: { name: string; code: string; type: ReactionType };
}

export async function checkStatusChange(
  realm: Pick<Realm, 'id'>,
  request: StatusRequest,
): Promise<StatusChange> {
  const statusText = request.status_text?.trim();
  if (statusText !== undefined && codePoints(statusText) > MAX_STATUS_TEXT_LENGTH)
    throw new JsonableError(
      `status_text is too long (limit: ${MAX_STATUS_TEXT_LENGTH} characters)`,
    );
  const { away, emoji_name: name, emoji_code: code, reaction_type: type } = request;
  if (away === undefined && statusText === undefined && name === undefined)
    throw new JsonableError('Client did not pass any new values.');
  const change: StatusChange = { away, statusText };
  if (name === '') change.emoji = { name: '', code: '', type: 'unicode_emoji' };
  else if (name !== undefined) {
    // Zulip's check_emoji_request: only the three types exist.
    if (type !== undefined && !(REACTION_TYPES as readonly string[]).includes(type))
      throw new JsonableError('Invalid emoji type.');
    const custom = await customEmojiFor(realm.id, name, code);
    change.emoji = checkEmoji(name, code, type as ReactionType | undefined, custom, true);
  } else if ((code ?? '') !== '' || (type ?? '') !== '')
    // Empty ones count as not passed (Zulip tests them for truth).
    throw new JsonableError(
      'Client must pass emoji_name if they pass either emoji_code or reaction_type.',
    );
  return change;
}

export async function doUpdateUserStatus(
  ctx: ActionContext,
  realm: Realm,
  user: User,
  change: StatusChange,
): Promise<void> {
  // The deprecated `away` is the presence_enabled setting, inverted.
  if (change.away !== undefined) await doSetPresenceEnabled(ctx, realm, user, !change.away);
  const parts = {
    timestamp: new Date(),
    ...(change.statusText !== undefined ? { statusText: change.statusText } : {}),
    ...(change.emoji
      ? {
          emojiName: change.emoji.name,
          emojiCode: change.emoji.code,
          reactionType: change.emoji.type,
        }
      : {}),
  };
  await ctx.tx.userStatus.upsert({
    where: { userId: user.id },
    create: { userId: user.id, ...parts },
    update: parts,
  });
  const audience = await usersWhoCanAccess(realm.id, ctx.tx, user);
  sendEventOnCommit(
    ctx,
    {
      type: 'user_status',
      user_id: user.id,
      ...(change.away !== undefined ? { away: change.away } : {}),
      ...(change.statusText !== undefined ? { status_text: change.statusText } : {}),
      ...(change.emoji
        ? {
            emoji_name: change.emoji.name,
            emoji_code: change.emoji.code,
            reaction_type: change.emoji.type,
          }
        : {}),
    },
    audience.map((viewer) => viewer.id),
  );
}
