// Custom profile fields (spec 2.8, 4.7; Zulip's actions/custom_profile_fields.py and the
// checks of views/custom_profile_fields.py): the organization's field definitions, which
// administrators create, update, reorder and delete, each change telling the whole
// organization the complete list in a `custom_profile_fields` event; and users' values, each
// change a realm_user update event with `custom_profile_field` to everyone who can see the user.
// Zulip keeps no audit log entries for either.
import {
  isUniqueViolation,
  type ActionContext,
  type CustomProfileField,
  type User,
} from '@parley/db';
import { JsonableError } from '@parley/errors';
import { sendEventOnCommit } from '../lib/events';
import { codePoints } from '../lib/text';
import {
  checkProfileValue,
  DEFAULT_EXTERNAL_ACCOUNTS,
  FieldType,
  HINT_MAX_LENGTH,
  isDefaultExternalAccount,
  isFieldType,
  isRendered,
  isUrl,
  MAX_DISPLAY_IN_PROFILE_SUMMARY_FIELDS,
  NAME_MAX_LENGTH,
  parseFieldData,
  profileFieldRows,
} from '../lib/profile-fields';
import { renderDescriptionForRealm } from '../lib/rendering';
import { activeUserIds, isAdmin, usersWhoCanAccess } from '../lib/users';
import { presentProfileField, type ProfileFieldJson } from '../presenters/profile-fields';

type FieldData = Record<string, unknown>;

/** What an administrator sends; undefined: not sent (on update: unchanged). */
export interface ProfileFieldInput {
  name?: string;
  hint?: string;
  fieldData?: FieldData;
  displayInProfileSummary?: boolean;
  required?: boolean;
  editableByUser?: boolean;
  useForUserMatching?: boolean;
}

/** Types whose values may be used to match users in typeahead (spec 2.8). */
const USER_MATCHING_TYPES = new Set<number>([FieldType.SHORT_TEXT, FieldType.EXTERNAL_ACCOUNT]);

const fieldNotFound = (id: number) => new JsonableError(`Field id ${id} not found.`);

// ---- Field definitions ----------------------------------------------------------------------

/** Zulip's check_dict_only for one dict of field_data: required and optional keys, each
 * checked, and nothing else. */
function checkDictOnly(
  varName: string,
  value: unknown,
  required: [string, (name: string, value: unknown) => void][],
  optional: [string, (name: string, value: unknown) => void][] = [],
): FieldData {
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new JsonableError(`${varName} is not a dict`);
  const dict = value as FieldData;
  for (const [key, check] of required) {
    if (!Object.hasOwn(dict, key)) throw new JsonableError(`${key} key is missing from ${varName}`);
    check(`${varName}["${key}"]`, dict[key]);
  }
  for (const [key, check] of optional)
    if (Object.hasOwn(dict, key)) check(`${varName}["${key}"]`, dict[key]);
  const known = new Set([...required, ...optional].map(([key]) => key));
  const unexpected = Object.keys(dict).filter((key) => !known.has(key));
  if (unexpected.length > 0)
    throw new JsonableError(`Unexpected arguments: ${unexpected.join(', ')}`);
  return dict;
}

function checkRequiredString(varName: string, value: unknown): void {
  if (typeof value !== 'string') throw new JsonableError(`${varName} is not a string`);
  if (value.trim() === '') throw new JsonableError(`${varName} cannot be blank.`);
}

/** Zulip's check_external_account_url_pattern: exactly one %(username)s, and a URL once it
 * is filled in. */
function checkUrlPattern(varName: string, value: unknown): void {
  if (typeof value !== 'string') throw new JsonableError(`${varName} is not a string`);
  if (value.split('%(username)s').length !== 2)
    throw new JsonableError("URL pattern must contain '%(username)s'.");
  if (!isUrl(value.replace('%(username)s', 'username')))
    throw new JsonableError(`${varName} is not a URL`);
}

/** Zulip's validate_select_field_data: at least one choice, each {text, order} non-blank,
 * no two with the same text. */
function checkSelectFieldData(fieldData: FieldData): void {
  const choices = Object.entries(fieldData);
  if (choices.length === 0) throw new JsonableError('Field must have at least one choice.');
  const texts = new Set<string>();
  for (const [key, choice] of choices) {
    if (key.trim() === '') throw new JsonableError("'value' cannot be blank.");
    const checked = checkDictOnly('field_data', choice, [
      ['text', checkRequiredString],
      ['order', checkRequiredString],
    ]);
    texts.add(checked.text as string);
  }
  if (texts.size !== choices.length)
    throw new JsonableError('Field must not have duplicate choices.');
}

/** Zulip's validate_external_account_field_data: a built-in subtype, or "custom" with an
 * optional URL pattern. */
function checkExternalAccountFieldData(fieldData: FieldData): void {
  checkDictOnly(
    'field_data',
    fieldData,
    [['subtype', checkRequiredString]],
    [['url_pattern', checkUrlPattern]],
  );
  if (!isDefaultExternalAccount(fieldData.subtype) && fieldData.subtype !== 'custom')
    throw new JsonableError('Invalid external account type');
}

function isDefaultExternalField(fieldType: number, fieldData: FieldData): boolean {
  return fieldType === FieldType.EXTERNAL_ACCOUNT && isDefaultExternalAccount(fieldData.subtype);
}

interface FieldDefinition {
  name: string;
  hint: string;
  fieldType: number;
  fieldData: FieldData;
  displayInProfileSummary: boolean;
  useForUserMatching: boolean;
}

/** Zulip's validate_custom_profile_field, in its order, plus use_for_user_matching. */
export function checkFieldDefinition(field: FieldDefinition): void {
  if (field.fieldType === FieldType.SELECT) checkSelectFieldData(field.fieldData);
  else if (field.fieldType === FieldType.EXTERNAL_ACCOUNT)
    checkExternalAccountFieldData(field.fieldData);
  // Built-in external accounts take their name and hint from the subtype.
  if (!isDefaultExternalField(field.fieldType, field.fieldData)) {
    if (field.name.trim() === '') throw new JsonableError('Label cannot be blank.');
    if (codePoints(field.hint) > HINT_MAX_LENGTH)
      throw new JsonableError(`hint is too long (limit: ${HINT_MAX_LENGTH} characters)`);
    if (codePoints(field.name) > NAME_MAX_LENGTH)
      throw new JsonableError(`name is too long (limit: ${NAME_MAX_LENGTH} characters)`);
  }
  if (!isFieldType(field.fieldType)) throw new JsonableError('Invalid field type.');
  if (field.displayInProfileSummary && field.fieldType === FieldType.USER)
    throw new JsonableError('Field type not supported for display in profile summary.');
  if (field.useForUserMatching && !USER_MATCHING_TYPES.has(field.fieldType))
    throw new JsonableError('Field type not supported for user matching.');
}

/** The stored field_data: JSON for dropdowns and external accounts, '' for the others. */
function storedFieldData(fieldType: number, fieldData: FieldData): string {
  if (isDefaultExternalField(fieldType, fieldData))
    return JSON.stringify({ subtype: fieldData.subtype });
  return fieldType === FieldType.SELECT || fieldType === FieldType.EXTERNAL_ACCOUNT
    ? JSON.stringify(fieldData)
    : '';
}

/** Serializes changes to one organization's fields, so the limit of two summary fields holds
 * under concurrent requests. */
async function lockFields(ctx: ActionContext, realmId: number): Promise<void> {
  await ctx.tx.$queryRaw`
    SELECT 1 AS locked FROM (SELECT pg_advisory_xact_lock(hashtext('custom_profile_field'), ${realmId})) AS l`;
}

async function checkSummaryLimit(
  ctx: ActionContext,
  realmId: number,
  excludeId?: number,
): Promise<void> {
  const shown = await ctx.tx.customProfileField.count({
    where: {
      realmId,
      displayInProfileSummary: true,
      ...(excludeId === undefined ? {} : { id: { not: excludeId } }),
    },
  });
  if (shown >= MAX_DISPLAY_IN_PROFILE_SUMMARY_FIELDS)
    throw new JsonableError(
      `Only ${MAX_DISPLAY_IN_PROFILE_SUMMARY_FIELDS} custom profile fields can be displayed in the profile summary.`,
    );
}

function duplicateLabel(error: unknown): never {
  if (isUniqueViolation(error)) throw new JsonableError('A field with that label already exists.');
  throw error;
}

async function notifyProfileFields(
  ctx: ActionContext,
  realmId: number,
): Promise<ProfileFieldJson[]> {
  const fields = (await profileFieldRows(realmId, ctx.tx)).map(presentProfileField);
  sendEventOnCommit(
    ctx,
    { type: 'custom_profile_fields', fields },
    await activeUserIds(realmId, ctx.tx),
  );
  return fields;
}

async function accessProfileField(
  ctx: ActionContext,
  realmId: number,
  id: number,
): Promise<CustomProfileField> {
  const field = await ctx.tx.customProfileField.findFirst({ where: { id, realmId } });
  if (!field) throw fieldNotFound(id);
  return field;
}

/** Zulip's create_realm_custom_profile_field: returns the new field's id. */
export async function doCreateProfileField(
  ctx: ActionContext,
  actor: User,
  fieldType: number,
  input: ProfileFieldInput,
): Promise<number> {
  const realmId = actor.realmId;
  await lockFields(ctx, realmId);
  const displayInProfileSummary = input.displayInProfileSummary ?? false;
  if (displayInProfileSummary) await checkSummaryLimit(ctx, realmId);
  const fieldData = input.fieldData ?? {};
  const definition = {
    name: (input.name ?? '').trim(),
    hint: input.hint ?? '',
    fieldType,
    fieldData,
    displayInProfileSummary,
    useForUserMatching: input.useForUserMatching ?? false,
  };
  checkFieldDefinition(definition);
  const builtIn = isDefaultExternalField(fieldType, fieldData)
    ? DEFAULT_EXTERNAL_ACCOUNTS[fieldData.subtype as string]!
    : null;
  const row = await ctx.tx.customProfileField
    .create({
      data: {
        realmId,
        name: builtIn ? builtIn.name : definition.name,
        hint: builtIn ? builtIn.hint : definition.hint,
        fieldType,
        fieldData: storedFieldData(fieldType, fieldData),
        displayInProfileSummary,
        required: input.required ?? false,
        editableByUser: input.editableByUser ?? true,
        useForUserMatching: definition.useForUserMatching,
      },
    })
    .catch(duplicateLabel);
  // New fields go last: Zulip orders by id until the first reorder.
  await ctx.tx.customProfileField.update({ where: { id: row.id }, data: { order: row.id } });
  await notifyProfileFields(ctx, realmId);
  return row.id;
}

/** JSON text with sorted keys: equality of dicts as Python compares them. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as FieldData).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

/** Zulip's update_realm_custom_profile_field. */
export async function doUpdateProfileField(
  ctx: ActionContext,
  actor: User,
  id: number,
  input: ProfileFieldInput,
): Promise<void> {
  const realmId = actor.realmId;
  await lockFields(ctx, realmId);
  const field = await accessProfileField(ctx, realmId, id);
  if (input.displayInProfileSummary) await checkSummaryLimit(ctx, realmId, id);
  const name = input.name?.trim();
  const currentData = parseFieldData(field.fieldData);
  // Built-in external accounts keep their name, hint and subtype; only how they are shown
  // and who may edit them can change.
  if (
    isDefaultExternalField(field.fieldType, currentData) &&
    ((name !== undefined && name !== field.name) ||
      (input.hint !== undefined && input.hint !== field.hint) ||
      (input.fieldData !== undefined && canonical(input.fieldData) !== canonical(currentData)))
  )
    throw new JsonableError('Default custom field cannot be updated.');
  const fieldData = input.fieldData ?? currentData;
  const definition = {
    name: name ?? field.name,
    hint: input.hint ?? field.hint,
    fieldType: field.fieldType,
    fieldData,
    displayInProfileSummary: input.displayInProfileSummary ?? field.displayInProfileSummary,
    useForUserMatching: input.useForUserMatching ?? field.useForUserMatching,
  };
  checkFieldDefinition(definition);
  // A custom external account turned into a built-in one takes the subtype's name and hint,
  // as a new field of that subtype would (what was asked is not checked, nor kept).
  const builtIn = isDefaultExternalField(field.fieldType, fieldData)
    ? DEFAULT_EXTERNAL_ACCOUNTS[fieldData.subtype as string]!
    : null;
  if (builtIn) Object.assign(definition, { name: builtIn.name, hint: builtIn.hint });
  const hasData =
    field.fieldType === FieldType.SELECT || field.fieldType === FieldType.EXTERNAL_ACCOUNT;
  const newFieldData =
    hasData && (input.fieldData !== undefined || field.fieldData === '')
      ? JSON.stringify(fieldData)
      : field.fieldData;
  if (field.fieldType === FieldType.SELECT && input.fieldData !== undefined)
    await removeDroppedChoices(ctx, field, fieldData);
  await ctx.tx.customProfileField
    .update({
      where: { id },
      data: {
        name: definition.name,
        hint: definition.hint,
        fieldData: newFieldData,
        displayInProfileSummary: definition.displayInProfileSummary,
        useForUserMatching: definition.useForUserMatching,
        ...(input.required === undefined ? {} : { required: input.required }),
        ...(input.editableByUser === undefined ? {} : { editableByUser: input.editableByUser }),
      },
    })
    .catch(duplicateLabel);
  await notifyProfileFields(ctx, realmId);
}

/** Values naming a choice the dropdown no longer has are removed (Zulip's
 * remove_custom_profile_field_value_if_required); their users' viewers learn it as a cleared
 * value, so their copies of profile_data stay right (Zulip sends nothing). Only those who may
 * see the user hear of it: a guest restricted to some users learns nothing of the others. */
async function removeDroppedChoices(
  ctx: ActionContext,
  field: CustomProfileField,
  fieldData: FieldData,
): Promise<void> {
  const dropped = Object.keys(parseFieldData(field.fieldData)).filter(
    (choice) => !Object.hasOwn(fieldData, choice),
  );
  if (dropped.length === 0) return;
  const removed = await ctx.tx.customProfileFieldValue.findMany({
    where: { fieldId: field.id, value: { in: dropped } },
    select: { id: true, userId: true },
  });
  if (removed.length === 0) return;
  await ctx.tx.customProfileFieldValue.deleteMany({
    where: { id: { in: removed.map((value) => value.id) } },
  });
  for (const { userId } of removed) {
    const viewers = await usersWhoCanAccess(field.realmId, ctx.tx, { id: userId, isBot: false });
    sendEventOnCommit(
      ctx,
      valueEvent(userId, field.id, null, null),
      viewers.map((viewer) => viewer.id),
    );
  }
}

/** Zulip's do_remove_realm_custom_profile_field: the field goes with every user's value. */
export async function doRemoveProfileField(
  ctx: ActionContext,
  actor: User,
  id: number,
): Promise<void> {
  await lockFields(ctx, actor.realmId);
  await accessProfileField(ctx, actor.realmId, id);
  await ctx.tx.customProfileFieldValue.deleteMany({ where: { fieldId: id } });
  await ctx.tx.customProfileField.delete({ where: { id } });
  await notifyProfileFields(ctx, actor.realmId);
}

/** Zulip's try_reorder_realm_custom_profile_fields: every field must be listed; each field's
 * order becomes its position (the last, for an id listed twice). */
export async function doReorderProfileFields(
  ctx: ActionContext,
  actor: User,
  order: number[],
): Promise<void> {
  await lockFields(ctx, actor.realmId);
  const position = new Map(order.map((id, index) => [id, index]));
  const fields = await ctx.tx.customProfileField.findMany({
    where: { realmId: actor.realmId },
    select: { id: true },
  });
  // Every field of the organization must be placed; other ids are ignored (Zulip's
  // try_reorder_realm_custom_profile_fields).
  if (fields.some((field) => !position.has(field.id)))
    throw new JsonableError('Invalid order mapping.');
  if (fields.length > 0) {
    const ids = fields.map((field) => field.id);
    const positions = ids.map((fieldId) => position.get(fieldId)!);
    await ctx.tx.$executeRaw`
      UPDATE custom_profile_field SET "order" = ordered.position
      FROM unnest(${ids}::int[], ${positions}::int[]) AS ordered(id, position)
      WHERE custom_profile_field.id = ordered.id`;
  }
  await notifyProfileFields(ctx, actor.realmId);
}

// ---- Users' values --------------------------------------------------------------------------

export interface ProfileDataChange {
  id: number;
  value: unknown;
}

export interface CheckedProfileValue {
  field: CustomProfileField;
  /** The stored text; null: the value is removed. */
  value: string | null;
}

const MAX_ID = 2 ** 31 - 1;

async function accessProfileFields(
  ctx: Pick<ActionContext, 'tx'>,
  actor: User,
  target: User,
  ids: number[],
): Promise<Map<number, CustomProfileField>> {
  if (target.isBot && ids.length > 0)
    throw new JsonableError('Bots do not have custom profile fields');
  const storable = [
    ...new Set(ids.filter((id) => Number.isInteger(id) && id >= 1 && id <= MAX_ID)),
  ];
  const fields = await ctx.tx.customProfileField.findMany({
    where: { realmId: target.realmId, id: { in: storable } },
  });
  const byId = new Map(fields.map((field) => [field.id, field]));
  for (const id of ids) {
    const field = byId.get(id);
    if (!field) throw fieldNotFound(id);
    // Administrators may set anyone's values, whatever the field allows.
    if (!field.editableByUser && !isAdmin(actor))
      throw new JsonableError(
        'You are not allowed to change this field. Contact an administrator to update it.',
      );
  }
  return byId;
}

/** Zulip's validate_user_custom_profile_data: validates every change before anything is
 * written. With `emptyClears` (PATCH /users/{id}), null, '' and [] remove the value. */
export async function checkProfileData(
  ctx: Pick<ActionContext, 'tx'>,
  actor: User,
  target: User,
  changes: ProfileDataChange[],
  { emptyClears }: { emptyClears: boolean },
): Promise<CheckedProfileValue[]> {
  const fields = await accessProfileFields(
    ctx,
    actor,
    target,
    changes.map((change) => change.id),
  );
  const checked: CheckedProfileValue[] = [];
  for (const change of changes) {
    const field = fields.get(change.id)!;
    const empty =
      change.value === null ||
      change.value === '' ||
      (Array.isArray(change.value) && change.value.length === 0);
    const value =
      emptyClears && empty
        ? null
        : await checkProfileValue(ctx.tx, target.realmId, field, change.value);
    checked.push({ field, value });
  }
  return checked;
}

/** Zulip's remove_user_custom_profile_data: the fields must exist (and be editable by the
 * user, unless an administrator acts). */
export async function checkRemoveProfileData(
  ctx: Pick<ActionContext, 'tx'>,
  actor: User,
  target: User,
  fieldIds: number[],
): Promise<CheckedProfileValue[]> {
  const fields = await accessProfileFields(ctx, actor, target, fieldIds);
  return fieldIds.map((id) => ({ field: fields.get(id)!, value: null }));
}

function valueEvent(
  userId: number,
  fieldId: number,
  value: string | null,
  renderedValue: string | null,
) {
  const field: Record<string, unknown> = { id: fieldId, value };
  // Zulip sends rendered_value only when there is one (and it is not empty).
  if (renderedValue) field.rendered_value = renderedValue;
  return {
    type: 'realm_user',
    op: 'update',
    person: { user_id: userId, custom_profile_field: field },
  } as const;
}

/** Writes checked values (Zulip's do_update_user_custom_profile_data_if_changed and
 * check_remove_custom_profile_field_value): unchanged values and removals of absent values
 * change nothing and tell no one. */
export async function doUpdateProfileData(
  ctx: ActionContext,
  target: User,
  changes: CheckedProfileValue[],
): Promise<void> {
  if (changes.length === 0) return;
  const { tx } = ctx;
  const current = new Map(
    (
      await tx.customProfileFieldValue.findMany({
        where: { userId: target.id, fieldId: { in: changes.map((change) => change.field.id) } },
        select: { fieldId: true, value: true },
      })
    ).map((row) => [row.fieldId, row.value]),
  );
  // One audience for every field's event: the same users see the same person.
  let viewers: number[] | undefined;
  const audience = async () =>
    (viewers ??= (await usersWhoCanAccess(target.realmId, tx, target)).map((user) => user.id));
  for (const { field, value } of changes) {
    const before = current.get(field.id);
    if (value === null) {
      if (before === undefined) continue;
      await tx.customProfileFieldValue.deleteMany({
        where: { userId: target.id, fieldId: field.id },
      });
      current.delete(field.id);
      sendEventOnCommit(ctx, valueEvent(target.id, field.id, null, null), await audience());
      continue;
    }
    if (before === value) continue;
    const renderedValue = isRendered(field.fieldType)
      ? await renderDescriptionForRealm(target.realmId, value, tx)
      : null;
    await tx.customProfileFieldValue.upsert({
      where: { userId_fieldId: { userId: target.id, fieldId: field.id } },
      create: { userId: target.id, fieldId: field.id, value, renderedValue },
      update: { value, renderedValue },
    });
    current.set(field.id, value);
    sendEventOnCommit(ctx, valueEvent(target.id, field.id, value, renderedValue), await audience());
  }
}
