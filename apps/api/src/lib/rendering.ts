// Rendering Markdown for an organization: loads what the content may refer to (users and
// groups it mentions, Zulip's MentionData; channels it links; the organization's linkifiers,
// custom emoji and uploaded images with their thumbnails), then renders with packages/markdown.
import { getPrisma, idsByLowerEquals, type Tx } from '@parley/db';
import {
  channelLinkCandidates,
  mentionCandidates,
  renderMarkdown,
  type MentionData,
  type Rendered,
} from '@parley/markdown';
import { linkedPathIds } from './attachments';
import { linkifiersForRealm } from './linkifiers';
import { activeRealmEmoji } from './realm-emoji';
import { uploadPreview } from './thumbnails';

export async function renderContent(
  realmId: number,
  content: string,
  db: Tx = getPrisma(),
): Promise<Rendered> {
  return renderMarkdown(content, await loadMentionData(realmId, content, db));
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

export async function loadMentionData(
  realmId: number,
  content: string,
  db: Tx = getPrisma(),
  { mentions = true }: { mentions?: boolean } = {},
): Promise<MentionData> {
  const wanted = mentions
    ? mentionCandidates(content)
    : { names: new Set<string>(), ids: new Set<number>(), groupNames: new Set<string>() };
  const data: MentionData = {
    usersByName: new Map(),
    usersById: new Map(),
    groupsByName: new Map(),
  };
  if (wanted.names.size > 0 || wanted.ids.size > 0) {
    const byName = await idsByLowerEquals(db, 'user_profile', 'full_name', realmId, [
      ...wanted.names,
    ]);
    const users = await db.user.findMany({
      where: { realmId, isActive: true, id: { in: [...byName, ...wanted.ids] } },
      select: { id: true, fullName: true },
    });
    for (const user of users) {
      data.usersById.set(user.id, user);
      const key = user.fullName.toLowerCase();
      data.usersByName.set(key, [...(data.usersByName.get(key) ?? []), user]);
    }
  }
  if (wanted.groupNames.size > 0) {
    const groups = await db.userGroup.findMany({
      where: {
        id: {
          in: await idsByLowerEquals(db, 'user_group', 'name', realmId, [...wanted.groupNames]),
        },
        deactivated: false,
        isSystemGroup: false,
      },
      select: { id: true, name: true },
    });
    for (const group of groups)
      data.groupsByName.set(group.name!.toLowerCase(), { id: group.id, name: group.name! });
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
  const channelNames = channelLinkCandidates(content);
  if (channelNames.size > 0) {
    // Only channels anyone in the organization may know of are linked: a link must not
    // reveal a private channel's name or id.
    const channels = await db.stream.findMany({
      where: {
        id: { in: await idsByLowerEquals(db, 'stream', 'name', realmId, [...channelNames]) },
        inviteOnly: false,
      },
      select: { id: true, name: true },
    });
    data.channelsByName = new Map(channels.map((c) => [c.name.toLowerCase(), c]));
  }
  return data;
}
