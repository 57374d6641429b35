// Custom emoji rows → Zulip's emoji objects (GET /realm/emoji, realm_emoji events).
import type { Prisma } from '@parley/db';

export type RealmEmoji = Prisma.RealmEmojiGetPayload<object>;

/** Where the image is served, without authentication, as Zulip serves avatars and emoji. */
export function emojiSourceUrl(emoji: Pick<RealmEmoji, 'realmId' | 'fileName'>): string {
  return `/user_avatars/${emoji.realmId}/emoji/images/${encodeURIComponent(emoji.fileName ?? '')}`;
}

export function presentRealmEmoji(emoji: RealmEmoji): Record<string, unknown> {
  return {
    id: String(emoji.id),
    name: emoji.name,
    source_url: emojiSourceUrl(emoji),
    deactivated: emoji.deactivated,
    author_id: emoji.authorId,
    // Parley keeps no still frame of animated emoji (Zulip's is a PNG it generates).
    still_url: null,
  };
}
