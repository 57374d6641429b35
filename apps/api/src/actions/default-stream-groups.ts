// Default channel groups (Zulip's zerver/actions/default_streams.py): administrators create,
// rename, describe and delete them and add or remove their channels; every change sends the
// whole list as a default_stream_groups event to every active member (guests see no default
// channels, as in Zulip). Zulip audits none of it, nor does Parley.
import { isUniqueViolation, type ActionContext, type Stream, type Tx } from '@parley/db';
import { JsonableError } from '@parley/errors';
import {
  defaultStreamGroupsOf,
  MAX_DEFAULT_STREAM_GROUP_NAME_LENGTH,
  type DefaultStreamGroupRow,
} from '../lib/default-stream-groups';
import { codePoints } from '../lib/text';
import { sendEventOnCommit } from '../lib/events';
import { activeNonGuestIds } from '../lib/users';

/** Zulip's check_default_stream_group_name (a NUL never gets here: parameters refuse null
 * bytes). */
export function checkDefaultStreamGroupName(name: string): void {
  if (name.trim() === '') throw new JsonableError(`Invalid default channel group name '${name}'`);
  if (codePoints(name) > MAX_DEFAULT_STREAM_GROUP_NAME_LENGTH)
    throw new JsonableError(
      `Default channel group name too long (limit: ${MAX_DEFAULT_STREAM_GROUP_NAME_LENGTH} characters)`,
    );
}

/** Every change to an organization's groups locks the organization (FOR NO KEY UPDATE, so
 * messages can still be inserted meanwhile): each change's event then lists what the changes
 * before it left, and the last event clients get is the list as it is. */
export async function lockDefaultStreamGroups(ctx: ActionContext, realmId: number) {
  await ctx.tx.$executeRaw`SELECT 1 FROM realm WHERE id = ${realmId} FOR NO KEY UPDATE`;
}

/** The channels joining a group, locked against archiving (FOR SHARE) until the commit: one
 * archived meanwhile is as unknown as any archived channel. */
async function lockActiveStreams(tx: Tx, streams: Stream[]): Promise<void> {
  const active = await tx.$queryRaw<{ id: number }[]>`
    SELECT id FROM stream WHERE id = ANY(${streams.map((stream) => stream.id)}::int[])
      AND NOT deactivated FOR SHARE`;
  const ids = new Set(active.map((row) => row.id));
  const gone = streams.find((stream) => !ids.has(stream.id));
  if (gone) throw new JsonableError(`Invalid channel name '${gone.name}'`);
}

const alreadyExists = (name: string) =>
  new JsonableError(`Default channel group '${name}' already exists`);

/** A concurrent request took the name between the check and the write. */
function refuseTakenName(name: string): (error: unknown) => never {
  return (error) => {
    throw isUniqueViolation(error) ? alreadyExists(name) : error;
  };
}

async function defaultIdsAmong(tx: Tx, realmId: number, streams: Stream[]): Promise<Set<number>> {
  const defaults = await tx.defaultStream.findMany({
    where: { realmId, streamId: { in: streams.map((stream) => stream.id) } },
    select: { streamId: true },
  });
  return new Set(defaults.map((row) => row.streamId));
}

const isDefault = (stream: Stream, groupName: string) =>
  new JsonableError(`'${stream.name}' is a default channel and cannot be added to '${groupName}'`);

/** Default channels may not join a group (Zulip keeps the two apart). */
async function checkNotDefault(tx: Tx, realmId: number, groupName: string, streams: Stream[]) {
  const defaults = await defaultIdsAmong(tx, realmId, streams);
  const found = streams.find((stream) => defaults.has(stream.id));
  if (found) throw isDefault(found, groupName);
}

/** The whole list, to every active member, after the commit. */
export async function notifyDefaultStreamGroups(ctx: ActionContext, realmId: number) {
  sendEventOnCommit(
    ctx,
    { type: 'default_stream_groups', default_stream_groups: await defaultStreamGroupsOf(realmId) },
    await activeNonGuestIds(realmId, ctx.tx),
  );
}

export async function doCreateDefaultStreamGroup(
  ctx: ActionContext,
  realmId: number,
  name: string,
  description: string,
  streams: Stream[],
): Promise<void> {
  const { tx } = ctx;
  await checkNotDefault(tx, realmId, name, streams);
  checkDefaultStreamGroupName(name);
  if (await tx.defaultStreamGroup.findFirst({ where: { realmId, name }, select: { id: true } }))
    throw alreadyExists(name);
  await lockActiveStreams(tx, streams);
  const group = await tx.defaultStreamGroup
    .create({ data: { realmId, name, description } })
    .catch(refuseTakenName(name));
  await addChannels(ctx, realmId, group.id, streams);
}

/** The channels, which the caller locked against their archival, join the group; everyone
 * is told. */
async function addChannels(
  ctx: ActionContext,
  realmId: number,
  groupId: number,
  streams: Stream[],
): Promise<void> {
  await ctx.tx.defaultStreamGroupStream.createMany({
    data: streams.map((stream) => ({ groupId, streamId: stream.id })),
    skipDuplicates: true,
  });
  await notifyDefaultStreamGroups(ctx, realmId);
}

export async function doAddStreamsToDefaultStreamGroup(
  ctx: ActionContext,
  realmId: number,
  group: DefaultStreamGroupRow,
  streams: Stream[],
): Promise<void> {
  const { tx } = ctx;
  const defaults = await defaultIdsAmong(tx, realmId, streams);
  // Each channel is checked in turn, as Zulip does.
  const present = new Set(group.streamIds);
  for (const stream of streams) {
    if (defaults.has(stream.id)) throw isDefault(stream, group.name);
    if (present.has(stream.id))
      throw new JsonableError(
        `Channel '${stream.name}' is already present in default channel group '${group.name}'`,
      );
    present.add(stream.id);
  }
  await lockActiveStreams(tx, streams);
  await addChannels(ctx, realmId, group.id, streams);
}

export async function doRemoveStreamsFromDefaultStreamGroup(
  ctx: ActionContext,
  realmId: number,
  group: DefaultStreamGroupRow,
  streams: Stream[],
): Promise<void> {
  const present = new Set(group.streamIds);
  const missing = streams.find((stream) => !present.has(stream.id));
  if (missing)
    throw new JsonableError(
      `Channel '${missing.name}' is not present in default channel group '${group.name}'`,
    );
  await ctx.tx.defaultStreamGroupStream.deleteMany({
    where: { groupId: group.id, streamId: { in: streams.map((stream) => stream.id) } },
  });
  await notifyDefaultStreamGroups(ctx, realmId);
}

/** Zulip's update_default_stream_group_info: a new name and/or description. Zulip checks a
 * new name only against its current name and the other groups; Parley also applies the
 * creation's name check, so no group is renamed to "" or to a name holding NUL. */
export async function doUpdateDefaultStreamGroupInfo(
  ctx: ActionContext,
  realmId: number,
  group: DefaultStreamGroupRow,
  changes: { name?: string; description?: string },
): Promise<void> {
  const { tx } = ctx;
  const { name, description } = changes;
  if (name !== undefined) {
    if (name === group.name)
      throw new JsonableError(`This default channel group is already named '${name}'`);
    checkDefaultStreamGroupName(name);
    if (await tx.defaultStreamGroup.findFirst({ where: { realmId, name }, select: { id: true } }))
      throw alreadyExists(name);
  }
  await tx.defaultStreamGroup
    .update({ where: { id: group.id }, data: { name, description } })
    .catch(refuseTakenName(name ?? group.name));
  await notifyDefaultStreamGroups(ctx, realmId);
}

export async function doRemoveDefaultStreamGroup(
  ctx: ActionContext,
  realmId: number,
  group: DefaultStreamGroupRow,
): Promise<void> {
  // Its channels go with it (the foreign key cascades).
  await ctx.tx.defaultStreamGroup.delete({ where: { id: group.id } });
  await notifyDefaultStreamGroups(ctx, realmId);
}

/** An archived channel leaves every group it was in (Zulip's do_deactivate_stream), with one
 * event for all of them. */
export async function removeStreamFromDefaultStreamGroups(
  ctx: ActionContext,
  stream: Stream,
): Promise<void> {
  // The archival holds the organization's row from its start (doArchiveStream), so group
  // changes wait for it; one that read the channel before still finds it archived when it
  // locks it (lockActiveStreams).
  const removed = await ctx.tx.defaultStreamGroupStream.deleteMany({
    where: { streamId: stream.id },
  });
  if (removed.count > 0) await notifyDefaultStreamGroups(ctx, stream.realmId);
}
