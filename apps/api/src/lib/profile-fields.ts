// Custom profile values: loading them for user objects, and validating a new value against its
// field's type (Zulip's CustomProfileField validators).
import { query, statement, type Tx } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { renderDescription } from '../presenters/realm';
import type { ProfileValue } from '../presenters/users';

export const FieldType = {
  SHORT_TEXT: 1,
  LONG_TEXT: 2,
  SELECT: 3,
  DATE: 4,
  URL: 5,
  USER: 6,
  EXTERNAL_ACCOUNT: 7,
  PRONOUNS: 8,
} as const;

/** Types whose values are Markdown and carry a rendered_value (Zulip's is_renderable). */
const RENDERED_TYPES = new Set<number>([FieldType.SHORT_TEXT, FieldType.LONG_TEXT]);

const MAX_LENGTH: Record<number, number> = {
  [FieldType.SHORT_TEXT]: 50,
  [FieldType.LONG_TEXT]: 500,
  [FieldType.EXTERNAL_ACCOUNT]: 50,
  [FieldType.PRONOUNS]: 50,
  [FieldType.URL]: 2048,
};

export function isRendered(fieldType: number): boolean {
  return RENDERED_TYPES.has(fieldType);
}

export function profileValue(
  fieldType: number,
  value: string,
  renderedValue: string | null,
): ProfileValue {
  return isRendered(fieldType)
    ? { value, rendered_value: renderedValue ?? renderDescription(value) }
    : { value };
}

interface ProfileValueRow {
  userId: number;
  fieldId: number;
  value: string;
  renderedValue: string | null;
  fieldType: number;
}

const PROFILE_VALUES = `SELECT v.user_profile_id AS "userId", v.field_id AS "fieldId", v.value,
    v.rendered_value AS "renderedValue", f.field_type AS "fieldType"
  FROM custom_profile_field_value v JOIN custom_profile_field f ON f.id = v.field_id
  WHERE f.realm_id = $1`;
const profileValuesOfRealm = statement<ProfileValueRow, [number]>(PROFILE_VALUES);
const profileValuesOfUsers = statement<ProfileValueRow, [number, number[]]>(
  `${PROFILE_VALUES} AND v.user_profile_id = ANY($2::int[])`,
);

/** Custom profile field values by user: of `userIds`, or of everyone in the organization
 * (one statement; read on every GET /users/me and /register). */
export async function loadProfileData(
  realmId: number,
  userIds: number[] | undefined,
): Promise<Map<number, Record<string, ProfileValue>>> {
  const rows = userIds
    ? await query(profileValuesOfUsers, [realmId, userIds])
    : await query(profileValuesOfRealm, [realmId]);
  const byUser = new Map<number, Record<string, ProfileValue>>();
  for (const row of rows) {
    const values = byUser.get(row.userId) ?? {};
    values[String(row.fieldId)] = profileValue(row.fieldType, row.value, row.renderedValue);
    byUser.set(row.userId, values);
  }
  return byUser;
}

export interface ProfileField {
  id: number;
  name: string;
  fieldType: number;
  fieldData: string;
}

/** Validates `value` for `field` and returns the stored text form (user lists as JSON). */
export async function checkProfileValue(
  db: Tx,
  realmId: number,
  field: ProfileField,
  value: unknown,
): Promise<string> {
  const limit = MAX_LENGTH[field.fieldType];
  switch (field.fieldType) {
    case FieldType.USER: {
      if (
        !Array.isArray(value) ||
        !value.every((id) => Number.isInteger(id) && id > 0 && id <= 2 ** 31 - 1)
      ) {
        throw new JsonableError(`${field.name} is not a list of user IDs`);
      }
      const ids = [...new Set(value as number[])];
      const found = await db.user.findMany({
        where: { id: { in: ids }, realmId, isActive: true },
        select: { id: true },
      });
      const known = new Set(found.map((user) => user.id));
      const missing = ids.find((id) => !known.has(id));
      if (missing !== undefined) throw new JsonableError(`Invalid user ID: ${missing}`);
      return JSON.stringify(ids);
    }
    case FieldType.SELECT: {
      const choices = parseFieldData(field.fieldData);
      if (typeof value !== 'string' || !Object.hasOwn(choices, value)) {
        throw new JsonableError(`'${String(value)}' is not a valid choice for '${field.name}'.`);
      }
      return value;
    }
    case FieldType.DATE: {
      if (typeof value !== 'string' || !isIsoDate(value))
        throw new JsonableError(`${field.name} is not a date`);
      return value;
    }
    case FieldType.URL: {
      if (typeof value !== 'string' || !isHttpUrl(value))
        throw new JsonableError(`${field.name} is not a URL`);
      if (value.length > limit!)
        throw new JsonableError(`${field.name} is too long (limit: ${limit} characters)`);
      return value;
    }
    default: {
      if (typeof value !== 'string') throw new JsonableError(`${field.name} is not a string`);
      if (limit !== undefined && value.length > limit) {
        throw new JsonableError(`${field.name} is too long (limit: ${limit} characters)`);
      }
      return value;
    }
  }
}

function parseFieldData(fieldData: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(fieldData || '{}');
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

function isIsoDate(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const date = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(value);
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
