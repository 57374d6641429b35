// Drafts synchronized between a user's clients (spec 2.5, 4.9; Zulip's zerver/lib/drafts.py):
// checkDraft validates and resolves a draft as a client sent it, the do* functions write and
// tell the user's clients with a `drafts` event.
import { query, statement, columnsOf, type ActionContext, type Realm, type User } from '@parley/db';
import { JsonableError, ResourceNotFoundError } from '@parley/errors';
import { sendEventOnCommit } from '../lib/events';
import { accessDraft } from '../lib/drafts';
import { accessStreamById, loadPermissions } from '../lib/streams';
import { apiEmailFor } from '../lib/users';
import { presentDraft } from '../presenters/drafts';
import { checkContent, MAX_TOPIC_LENGTH } from './messages';
import { truncateText } from '../lib/text';

/** A draft as the client sent it (already through the parameter schema: content stripped and
 * not blank, timestamp within what a date can hold). */
export interface DraftInput {
  type: '' | 'stream' | 'private';
  to: number[];
  topic: string;
  content: string;
  timestamp?: number | null;
}

/** What a draft row stores. */
export interface CheckedDraft {
  type: '' | 'stream' | 'private';
  toIds: number[];
  topic: string;
  content: string;
  lastEditTime: Date;
}

const INT32_MAX = 2 ** 31 - 1;
const isId = (id: number) => Number.isInteger(id) && id > 0 && id <= INT32_MAX;

const usersByIds = statement<User, [number[], number]>(
  `SELECT ${columnsOf('User', 'u')} FROM user_profile u
   WHERE u.id = ANY($1::int[]) AND u.realm_id = $2`,
);

/** Zulip's truncate_topic: at most MAX_TOPIC_LENGTH code points, cut ones ending in "...". */
const truncateTopic = (topic: string) => truncateText(topic, MAX_TOPIC_LENGTH, '...');

/** Zulip's further_validated_draft_dict, in its order: content, timestamp, then the
 * addressee. A channel draft needs exactly one channel the user can read; a direct draft names
 * users of the organization who are still active (none: it is stored unaddressed, as Zulip
 * stores it without a recipient); an unaddressed draft keeps neither `to` nor topic. */
export async function checkDraft(
  user: User,
  realm: Realm,
  input: DraftInput,
  now = Date.now(),
): Promise<CheckedDraft> {
  const content = checkContent(input.content);
  const seconds = input.timestamp ?? now / 1000;
  if (seconds < 0) throw new JsonableError('Timestamp must not be negative.');
  const lastEditTime = new Date(Math.round(seconds * 1000));
  if (input.type === 'stream') {
    const topic = truncateTopic(input.topic);
    if (input.to.length !== 1)
      throw new JsonableError('Must specify exactly 1 channel ID for channel messages');
    const streamId = input.to[0]!;
    if (!isId(streamId)) throw new JsonableError('Invalid channel ID');
    // Zulip's access_stream_by_id requires an active channel by default.
    const { stream } = await accessStreamById(await loadPermissions(user), streamId, {
      allowArchived: false,
    });
    return { type: 'stream', toIds: [stream.id], topic, content, lastEditTime };
  }
  if (input.type === 'private' && input.to.length > 0) {
    const ids = [...new Set(input.to)];
    const valid = ids.filter(isId);
    const found = new Map(
      (valid.length > 0 ? await query(usersByIds, [valid, user.realmId]) : []).map((u) => [
        u.id,
        u,
      ]),
    );
    for (const id of ids) if (!found.has(id)) throw new JsonableError(`Invalid user ID ${id}`);
    for (const id of ids) {
      const target = found.get(id)!;
      if (!target.isActive)
        throw new JsonableError(`'${apiEmailFor(user, target, realm)}' is no longer using Zulip.`);
    }
    // Zulip keeps the conversation: the other participants, or the user alone.
    const others = ids.filter((id) => id !== user.id).sort((a, b) => a - b);
    const toIds = others.length > 0 ? others : [user.id];
    return { type: 'private', toIds, topic: '', content, lastEditTime };
  }
  return { type: '', toIds: [], topic: '', content, lastEditTime };
}

/** Zulip's do_create_drafts: the drafts in the order given, one `add` event listing them. */
export async function doCreateDrafts(
  ctx: ActionContext,
  user: User,
  drafts: CheckedDraft[],
): Promise<number[]> {
  const rows = [];
  for (const draft of drafts)
    rows.push(await ctx.tx.draft.create({ data: { userId: user.id, ...draft } }));
  // Even for an empty list, as Zulip's do_create_drafts.
  sendEventOnCommit(ctx, { type: 'drafts', op: 'add', drafts: rows.map(presentDraft) }, [user.id]);
  return rows.map((row) => row.id);
}

/** Zulip's edit_draft: a draft the user does not have is refused before the new one is
 * checked. */
export async function checkEditDraft(
  ctx: ActionContext,
  user: User,
  realm: Realm,
  draftId: number,
  input: DraftInput,
): Promise<void> {
  await accessDraft(user.id, draftId, ctx.tx);
  await doEditDraft(ctx, user, draftId, await checkDraft(user, realm, input));
}

/** Zulip's do_edit_draft: the whole draft is replaced. */
export async function doEditDraft(
  ctx: ActionContext,
  user: User,
  draftId: number,
  draft: CheckedDraft,
): Promise<void> {
  const { count } = await ctx.tx.draft.updateMany({
    where: { id: draftId, userId: user.id },
    data: draft,
  });
  if (count === 0) throw new ResourceNotFoundError('Draft does not exist');
  const row = { id: draftId, userId: user.id, ...draft };
  sendEventOnCommit(ctx, { type: 'drafts', op: 'update', draft: presentDraft(row) }, [user.id]);
}

/** Zulip's do_delete_draft. */
export async function doDeleteDraft(
  ctx: ActionContext,
  user: User,
  draftId: number,
): Promise<void> {
  const { count } = await ctx.tx.draft.deleteMany({ where: { id: draftId, userId: user.id } });
  if (count === 0) throw new ResourceNotFoundError('Draft does not exist');
  sendEventOnCommit(ctx, { type: 'drafts', op: 'remove', draft_id: draftId }, [user.id]);
}

/** For turning enable_drafts_synchronization off (Zulip's do_change_user_setting): the
 * server forgets the user's drafts, without events, since the clients keep theirs. */
export async function doForgetDrafts(ctx: ActionContext, userId: number): Promise<void> {
  await ctx.tx.draft.deleteMany({ where: { userId } });
}
