// Default channel groups (Zulip's zerver/actions/default_streams.py): administrators create,
// rename, describe and delete them and add or remove their channels; every change sends the
// whole list as a default_stream_groups event to every active member (guests see no default
// channels, as in Zulip). Zulip audits none of it, nor does Parley.
import { isUniqueViolation, Role, type ActionContext, type Stream, type Tx } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { defaultStreamGroupsOf, type DefaultStreamGroupRow } from '../lib/default-stream-groups';
import { sendEventOnCommit } from '../lib/events';

/** Zulip's check_default_stream_group_name. Its length is checked with the parameters, and
 * a NUL never gets here: parameters refuse null bytes. */
export function checkDefaultStreamGroupName(name: string): void {
  if (name.trim() === '') throw new JsonableError(`Invalid default channel group name '${name}'`);
}

const alreadyExists = (name: string) =>
  new JsonableError(`Default channel group '${name}' already exists`);

/** A concurrent request took the name between the check and the write. */
function refuseTakenName(name: string): (error: unknown) => never {
  return (error) => {
    throw isUniqueViolation(error) ? alreadyExists(name) : error;
  };
}

/** Default channels may not join a group (Zulip keeps the two apart). */
async function checkNotDefault(tx: Tx, realmId: number, groupName: string, streams: Stream[]) {
  const defaults = await tx.defaultStream.findMany({
    where: { realmId, streamId: { in: streams.map((stream) => stream.id) } },
    select: { streamId: true },
  });
  const defaultIds = new Set(defaults.map((row) => row.streamId));
  const found = streams.find((stream) => defaultIds.has(stream.id));
  if (found)
    throw new JsonableError(
      `'${found.name}' is a default channel and cannot be added to '${groupName}'`,
    );
}

/** The whole list, to every active member, after the commit. */
export async function notifyDefaultStreamGroups(ctx: ActionContext, realmId: number) {
  const members = await ctx.tx.user.findMany({
    where: { realmId, isActive: true, role: { not: Role.GUEST } },
    select: { id: true },
  });
  sendEventOnCommit(
    ctx,
    { type: 'default_stream_groups', default_stream_groups: await defaultStreamGroupsOf(realmId) },
    members.map((member) => member.id),
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
  const group = await tx.defaultStreamGroup
    .create({ data: { realmId, name, description } })
    .catch(refuseTakenName(name));
  await tx.defaultStreamGroupStream.createMany({
    data: streams.map((stream) => ({ groupId: group.id, streamId: stream.id })),
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
  await checkNotDefault(tx, realmId, group.name, streams);
  const present = new Set(group.streamIds);
  for (const stream of streams) {
    if (present.has(stream.id))
      throw new JsonableError(
        `Channel '${stream.name}' is already present in default channel group '${group.name}'`,
      );
    present.add(stream.id);
  }
  await tx.defaultStreamGroupStream.createMany({
    data: streams.map((stream) => ({ groupId: group.id, streamId: stream.id })),
    skipDuplicates: true,
  });
  await notifyDefaultStreamGroups(ctx, realmId);
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
  const removed = await ctx.tx.defaultStreamGroupStream.deleteMany({
    where: { streamId: stream.id },
  });
  if (removed.count > 0) await notifyDefaultStreamGroups(ctx, stream.realmId);
}
