// Rendering Markdown for an organization: loads what the content may refer to (users and
// groups it mentions, Zulip's MentionData; channels it links; the organization's linkifiers,
// custom emoji and uploaded images with their thumbnails), then renders with packages/markdown.
import { realmUrl } from '@parley/auth';
import {
  getPrisma,
  intArrayLiteral,
  query,
  statement,
  SYSTEM_GROUP_DISPLAY_NAMES,
  type Realm,
  type Tx,
  type User,
} from '@parley/db';
import {
  channelLinkCandidates,
  mentionCandidates,
  renderMarkdown,
  type MentionData,
  type MentionGroup,
  type Rendered,
  type RenderOptions,
} from '@parley/markdown';
import { linkedPathIds } from './attachments';
import { activeMembersSql } from './groups';
import { linkifiersForRealm } from './linkifiers';
import { activeRealmEmoji } from './realm-emoji';
import { uploadPreview } from './thumbnails';
import { inaccessibleUserIds } from './user-access';

/** Who writes the content: a guest limited by can_access_all_users_group may not mention
 * users they may not access (Zulip's MentionBackend with a message_sender), whose mentions
 * stay text. */
export interface ContentAuthor {
  realm: Realm;
  /** The organization's and the author's settings that change the rendering
   * (messageRenderOptions). */
  user: Pick<User, 'id' | 'role' | 'translateEmoticons'>;
}

/** What the organization's settings and the author's change in a message's rendering (Zulip
 * renders with the message's realm and the sender's settings). */
export function messageRenderOptions(
  realm: Pick<Realm, 'stringId' | 'defaultCodeBlockLanguage' | 'inlineImagePreview'>,
  user: Pick<User, 'translateEmoticons'>,
): RenderOptions {
  return {
    translateEmoticons: user.translateEmoticons,
    defaultCodeBlockLanguage: realm.defaultCodeBlockLanguage,
    realmUrl: realmUrl(realm),
    imagePreviews: realm.inlineImagePreview,
  };
}

export async function renderContent(
  realmId: number,
  content: string,
  db: Tx = getPrisma(),
  author?: ContentAuthor,
): Promise<Rendered> {
  return renderMarkdown(
    content,
    await loadMentionData(realmId, content, db, { author }),
    author ? messageRenderOptions(author.realm, author.user) : {},
  );
}

/** A channel description or a Markdown profile value: the organization's linkifiers, emoji
 * and channel links apply, but nobody is mentioned (Zulip's render_stream_description). */
export async function renderDescriptionForRealm(
  realmId: number,
  markdown: string,
  db: Tx = getPrisma(),
): Promise<string> {
  if (markdown.trim() === '') return '';
  const data = await loadMentionData(realmId, markdown, db, { mentions: false });
  return renderMarkdown(markdown, data).html;
}

/** A text array parameter lowered by PostgreSQL, as the column it is compared with: as one
 * array (not a subquery), which lets (realm_id, lower(…)) indexes find the rows. */
const lowered = (param: string) => `ARRAY(SELECT lower(v) FROM unnest(${param}::text[]) v)`;

/** A named group the content names, with what a send needs when it is mentioned: who may
 * mention it (Zulip's can_mention_group) and its active members, through subgroups. */
export interface NamedGroup extends MentionGroup {
  canMentionGroupId: number | null;
  members: number[];
}

/** MentionData with the named groups' settings and members (see NamedGroup). */
export interface OrganizationMentionData extends MentionData {
  groupsByName: Map<string, NamedGroup>;
}

/** What the content names, in one statement (typed SQL: in the caller's transaction if there is
 * one): active users by name (any case) or id; named groups by name (system groups shown by
 * their display names, deactivated ones too, to render silently, as Zulip does), each
 * with its can_mention_group and its active members through subgroups (a group mention's
 * permission check and flags need no statement of their own); and channels by name, only those
 * anyone in the organization may know of, since a link must not reveal a private channel's
 * name or id. */
const namedTargets = statement<
  {
    kind: 'user' | 'group' | 'channel';
    id: number;
    name: string;
    /** Groups only. */
    canMentionGroupId: number | null;
    members: number[] | null;
    deactivated: boolean | null;
    system: boolean | null;
  },
  [number, string[], string, string[], string[]]
>(`
  SELECT 'user' AS kind, id, full_name AS name, NULL::int AS "canMentionGroupId",
      NULL::int[] AS members, NULL::boolean AS deactivated, NULL::boolean AS system
    FROM user_profile
    WHERE realm_id = $1 AND is_active
      AND (lower(full_name) = ANY (${lowered('$2')}) OR id = ANY ($3::int[]))
  UNION ALL
  SELECT 'group', ug.id, ug.name, ug.can_mention_group_id,
      ARRAY(${activeMembersSql('ug.id')}), ug.deactivated, ug.is_system_group
    FROM user_group ug
    WHERE ug.realm_id = $1 AND ug.name IS NOT NULL AND lower(ug.name) = ANY (${lowered('$4')})
  UNION ALL
  SELECT 'channel', id, name, NULL, NULL, NULL, NULL FROM stream
    WHERE realm_id = $1 AND NOT invite_only AND lower(name) = ANY (${lowered('$5')})`);

export async function loadMentionData(
  realmId: number,
  content: string,
  db: Tx = getPrisma(),
  { mentions = true, author }: { mentions?: boolean; author?: ContentAuthor } = {},
): Promise<OrganizationMentionData> {
  const wanted = mentions
    ? mentionCandidates(content)
    : { names: new Set<string>(), ids: new Set<number>(), groupNames: new Set<string>() };
  const data: OrganizationMentionData = {
    usersByName: new Map(),
    usersById: new Map(),
    groupsByName: new Map(),
  };
  const channelNames = channelLinkCandidates(content);
  if (wanted.names.size + wanted.ids.size + wanted.groupNames.size + channelNames.size > 0)
    for (const target of await query(namedTargets, [
      realmId,
      [...wanted.names],
      intArrayLiteral([...wanted.ids]),
      [...wanted.groupNames],
      [...channelNames],
    ]))
      if (target.kind === 'user') {
        const user = { id: target.id, fullName: target.name };
        data.usersById.set(user.id, user);
        const key = user.fullName.toLowerCase();
        data.usersByName.set(key, [...(data.usersByName.get(key) ?? []), user]);
      } else if (target.kind === 'group')
        data.groupsByName.set(target.name.toLowerCase(), {
          id: target.id,
          name: target.name,
          ...(target.system ? { displayName: SYSTEM_GROUP_DISPLAY_NAMES[target.name] } : {}),
          ...(target.deactivated ? { deactivated: true } : {}),
          canMentionGroupId: target.canMentionGroupId,
          members: target.members ?? [],
        });
      else
        (data.channelsByName ??= new Map()).set(target.name.toLowerCase(), {
          id: target.id,
          name: target.name,
        });
  if (author && data.usersById.size > 0) {
    const hidden = await inaccessibleUserIds(author.realm, author.user, [...data.usersById.keys()]);
    for (const id of hidden) data.usersById.delete(id);
    for (const [name, users] of data.usersByName) {
      const left = users.filter((user) => !hidden.has(user.id));
      if (left.length > 0) data.usersByName.set(name, left);
      else data.usersByName.delete(name);
    }
  }
  data.linkifiers = await linkifiersForRealm(realmId);
  if (/:[\w+-]+:/.test(content)) data.realmEmoji = await activeRealmEmoji(realmId, db);
  const pathIds = linkedPathIds(content);
  if (pathIds.length > 0) {
    // Previews need the image's size, type and thumbnails (Zulip's get_user_upload_previews);
    // opening it still needs access. Images the server does not thumbnail get no preview.
    const images = await db.attachment.findMany({
      where: { realmId, pathId: { in: pathIds }, width: { not: null }, height: { not: null } },
      select: {
        pathId: true,
        contentType: true,
        width: true,
        height: true,
        frames: true,
        thumbnailMetadata: true,
      },
    });
    data.uploads = new Map();
    for (const image of images) {
      const preview = uploadPreview(image);
      if (preview) data.uploads.set(image.pathId, preview);
    }
  }
  return data;
}
