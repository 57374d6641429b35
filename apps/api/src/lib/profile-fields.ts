// Custom profile fields: reading the definitions and the values (for user objects), the
// built-in external-account kinds, and validating one user's value against its field's type
// (Zulip's CustomProfileField validators, with their wording).
import { z } from 'zod';
import { getPrisma, query, statement, type CustomProfileField, type Tx } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { renderDescription } from '../presenters/realm';
import type { ProfileValue } from '../presenters/users';
import { codePoints } from './text';

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

/** The register state's custom_profile_field_types (Zulip's ALL_FIELD_TYPES: keyword → id and
 * display name). */
export const FIELD_TYPES: Record<string, { id: number; name: string }> = {
  SHORT_TEXT: { id: FieldType.SHORT_TEXT, name: 'Text (short)' },
  LONG_TEXT: { id: FieldType.LONG_TEXT, name: 'Text (long)' },
  SELECT: { id: FieldType.SELECT, name: 'List of options' },
  DATE: { id: FieldType.DATE, name: 'Date' },
  URL: { id: FieldType.URL, name: 'Link' },
  USER: { id: FieldType.USER, name: 'Users' },
  EXTERNAL_ACCOUNT: { id: FieldType.EXTERNAL_ACCOUNT, name: 'External account' },
  PRONOUNS: { id: FieldType.PRONOUNS, name: 'Pronouns' },
};

export function isFieldType(value: number): boolean {
  return Number.isInteger(value) && value >= FieldType.SHORT_TEXT && value <= FieldType.PRONOUNS;
}

/** Field limits (Zulip's CustomProfileField.NAME_MAX_LENGTH etc.). */
export const NAME_MAX_LENGTH = 40;
export const HINT_MAX_LENGTH = 80;
export const MAX_DISPLAY_IN_PROFILE_SUMMARY_FIELDS = 2;

export interface ExternalAccount {
  /** What administrators pick from. */
  text: string;
  /** The field's label. */
  name: string;
  hint: string;
  /** '%(username)s' stands for the value; '' makes the field plain text. */
  urlPattern: string;
}

const account = (text: string, name: string, urlPattern: string, hint = ''): ExternalAccount => ({
  text,
  name,
  hint,
  urlPattern,
});

/** The external-account kinds an administrator can add by subtype alone; name and hint come
 * from here (Zulip's DEFAULT_EXTERNAL_ACCOUNTS). */
export const DEFAULT_EXTERNAL_ACCOUNTS: Readonly<Record<string, ExternalAccount>> = {
  behance: account('Behance', 'Behance username', 'https://www.behance.net/%(username)s'),
  bitbucket: account('Bitbucket', 'Bitbucket username', 'https://bitbucket.org/%(username)s'),
  bluesky: account('Bluesky', 'Bluesky handle', 'https://bsky.app/profile/%(username)s'),
  codeberg: account('Codeberg', 'Codeberg username', 'https://codeberg.org/%(username)s'),
  discord: account('Discord', 'Discord tag', ''),
  dribbble: account('Dribbble', 'Dribbble username', 'https://dribbble.com/%(username)s'),
  facebook: account('Facebook', 'Facebook username', 'https://www.facebook.com/%(username)s'),
  github: account('GitHub', 'GitHub username', 'https://github.com/%(username)s'),
  gitlab: account('GitLab', 'GitLab username', 'https://gitlab.com/%(username)s'),
  instagram: account('Instagram', 'Instagram username', 'https://www.instagram.com/%(username)s'),
  linkedin: account(
    'LinkedIn',
    'LinkedIn profile name',
    'https://www.linkedin.com/in/%(username)s',
  ),
  mastodon: account('Mastodon', 'Mastodon profile', '%(username)s', 'The full URL to your profile'),
  medium: account('Medium', 'Medium username', 'https://%(username)s.medium.com'),
  pinterest: account('Pinterest', 'Pinterest username', 'https://www.pinterest.com/%(username)s'),
  reddit: account('Reddit', 'Reddit username', 'https://www.reddit.com/user/%(username)s'),
  snapchat: account('Snapchat', 'Snapchat username', 'https://www.snapchat.com/@%(username)s'),
  threads: account('Threads', 'Threads username', 'https://www.threads.com/@%(username)s'),
  tiktok: account('TikTok', 'TikTok username', 'https://www.tiktok.com/@%(username)s'),
  twitch: account('Twitch', 'Twitch username', 'https://www.twitch.tv/%(username)s'),
  x: account('X', 'X username', 'https://x.com/%(username)s'),
  youtube: account('YouTube', 'YouTube handle', 'https://www.youtube.com/%(username)s'),
};

export function isDefaultExternalAccount(subtype: unknown): subtype is string {
  return typeof subtype === 'string' && Object.hasOwn(DEFAULT_EXTERNAL_ACCOUNTS, subtype);
}

/** Types whose values are Markdown and carry a rendered_value (Zulip's is_renderable). */
const RENDERED_TYPES = new Set<number>([FieldType.SHORT_TEXT, FieldType.LONG_TEXT]);

export function isRendered(fieldType: number): boolean {
  return RENDERED_TYPES.has(fieldType);
}

/** Every field of the organization, in display order. */
export function profileFieldRows(realmId: number, db: Tx = getPrisma()) {
  return db.customProfileField.findMany({
    where: { realmId },
    orderBy: [{ order: 'asc' }, { id: 'asc' }],
  });
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

export interface ProfileValueRow {
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
  return profileDataOf(rows);
}

/** Profile values rows (PROFILE_VALUE_JSON's, or PROFILE_VALUES') by user. */
export function profileDataOf(
  rows: readonly ProfileValueRow[],
): Map<number, Record<string, ProfileValue>> {
  const byUser = new Map<number, Record<string, ProfileValue>>();
  for (const row of rows) {
    const values = byUser.get(row.userId) ?? {};
    values[String(row.fieldId)] = profileValue(row.fieldType, row.value, row.renderedValue);
    byUser.set(row.userId, values);
  }
  return byUser;
}

/** A ProfileValueRow as JSON (`v` the value, `f` its field), for statements that read the
 * values with something else. */
export const PROFILE_VALUE_JSON = `json_build_object('userId', v.user_profile_id,
  'fieldId', v.field_id, 'value', v.value, 'renderedValue', v.rendered_value,
  'fieldType', f.field_type)`;

/** More entries than any organization has fields: a bound on the work of one request. */
export const MAX_PROFILE_DATA_ENTRIES = 1000;

/** The JSON list of {id, value} that PATCH /users/me/profile_data (`data`) and
 * PATCH /users/{id} (`profile_data`, where null clears a value) take. Unknown ids, however
 * large, are "not found" later rather than refused here. */
export function profileDataSchema(allowNull: boolean) {
  const value = z.union([z.string(), z.array(z.number().int())]);
  return z
    .array(z.object({ id: z.number().int(), value: allowNull ? value.nullable() : value }))
    .max(MAX_PROFILE_DATA_ENTRIES);
}

export type ProfileField = Pick<CustomProfileField, 'id' | 'name' | 'fieldType' | 'fieldData'>;

const MAX_ID = 2 ** 31 - 1;
const isStorableId = (id: number) => Number.isInteger(id) && id >= 1 && id <= MAX_ID;

function checkString(varName: string, value: unknown): string {
  if (typeof value !== 'string') throw new JsonableError(`${varName} is not a string`);
  return value;
}

function checkCappedString(varName: string, value: unknown, maxLength: number): string {
  const text = checkString(varName, value);
  if (codePoints(text) > maxLength)
    throw new JsonableError(`${varName} is too long (limit: ${maxLength} characters)`);
  return text;
}

/** Validates `value` for `field` and returns the stored text form (user lists as JSON), with
 * the messages of Zulip's validators (the field's name stands for the parameter). */
export async function checkProfileValue(
  db: Tx,
  realmId: number,
  field: ProfileField,
  value: unknown,
): Promise<string> {
  const name = field.name;
  switch (field.fieldType) {
    case FieldType.LONG_TEXT:
      return checkCappedString(name, value, 500);
    case FieldType.SELECT: {
      const choice = checkString(name, value);
      if (!Object.hasOwn(parseFieldData(field.fieldData), choice))
        throw new JsonableError(`'${choice}' is not a valid choice for '${name}'.`);
      return choice;
    }
    case FieldType.DATE: {
      const date = checkString(name, value);
      if (!isIsoDate(date)) throw new JsonableError(`${name} is not a date`);
      return date;
    }
    case FieldType.URL: {
      const url = checkString(name, value);
      if (!isUrl(url)) throw new JsonableError(`${name} is not a URL`);
      return url;
    }
    case FieldType.USER:
      return JSON.stringify(await checkUserIds(db, realmId, value));
    default:
      // Short text, external account, pronouns.
      return checkCappedString(name, value, 50);
  }
}

/** Zulip's check_valid_user_ids: a list of integers naming active people of the
 * organization. */
async function checkUserIds(db: Tx, realmId: number, value: unknown): Promise<number[]> {
  if (!Array.isArray(value)) throw new JsonableError('User IDs is not a list');
  value.forEach((id, index) => {
    if (typeof id !== 'number' || !Number.isInteger(id))
      throw new JsonableError(`User IDs[${index}] is not an integer`);
  });
  const ids = value as number[];
  const found = await db.user.findMany({
    where: { realmId, id: { in: [...new Set(ids.filter(isStorableId))] } },
    select: { id: true, isActive: true, isBot: true },
  });
  const byId = new Map(found.map((user) => [user.id, user]));
  const invalid = ids.filter((id) => !byId.has(id));
  if (invalid.length > 0) throw new JsonableError(`Invalid user IDs: ${invalid.join(', ')}`);
  for (const id of ids) {
    const user = byId.get(id)!;
    if (!user.isActive) throw new JsonableError(`User with ID ${id} is deactivated`);
    if (user.isBot) throw new JsonableError(`User with ID ${id} is a bot`);
  }
  return ids;
}

/** A field's stored field_data as an object ({} when empty or not an object). */
export function parseFieldData(fieldData: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(fieldData || '{}');
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** Python's date.fromisoformat(value).isoformat() == value: YYYY-MM-DD, years 1 to 9999. */
export function isIsoDate(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value) || value.startsWith('0000')) return false;
  const date = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === value;
}

const URL_SCHEMES = new Set(['http:', 'https:', 'ftp:', 'ftps:']);
const MAX_URL_LENGTH = 2048;
// A host as Django's URLValidator accepts it: a dotted name ending in a top-level domain of
// letters (or punycode), localhost, or an IP address.
const HOSTNAME =
  /^(?:[a-z0-9\u00a1-\uffff](?:[a-z0-9\u00a1-\uffff-]{0,61}[a-z0-9\u00a1-\uffff])?\.)+(?:[a-z\u00a1-\uffff-]{2,63}|xn--[a-z0-9]{1,59})\.?$/i;
const IPV4 = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** Django's URLValidator, closely enough: http(s)/ftp(s), a real host, no spaces, at most
 * 2048 characters. */
export function isUrl(value: string): boolean {
  if (value.length > MAX_URL_LENGTH || /\s/.test(value)) return false;
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value);
  if (!scheme || !URL_SCHEMES.has(`${scheme[1]!.toLowerCase()}:`)) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  // The host as written (URL() would turn "example" into a valid-looking host).
  const authority = value.slice(scheme[0].length).split(/[/?#]/, 1)[0]!;
  const hostPort = authority.includes('@')
    ? authority.slice(authority.lastIndexOf('@') + 1)
    : authority;
  if (hostPort.startsWith('[')) return url.hostname.startsWith('[');
  const host = hostPort.replace(/:\d{1,5}$/, '');
  return host.toLowerCase() === 'localhost' || IPV4.test(host) || HOSTNAME.test(host);
}
