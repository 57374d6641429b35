// Parameter shapes shared by the channel endpoints (POST /users/me/subscriptions creates
// channels with the same settings PATCH /streams/{id} changes).
import { z } from 'zod';
import { RequestVariableConversionError } from '@parley/errors';
import { p } from '@parley/http';
import { STREAM_GROUP_SETTINGS, type StreamGroupSetting } from '../presenters/streams';
import type { GroupSettingValue } from './groups';

const MAX_ID = 2 ** 31 - 1;
export const id = z.number().int().min(1).max(MAX_ID);

/** Bounds on list parameters: each item costs work inside one transaction. */
export const MAX_LIST = 5000;
export const MAX_CHANNEL_NAMES = 500;

export const groupSettingValue: z.ZodType<GroupSettingValue> = z.union([
  id,
  z.strictObject({
    direct_members: z.array(id).max(MAX_LIST),
    direct_subgroups: z.array(id).max(MAX_LIST),
  }),
]);

/** message_retention_days: "realm_default" (null), "unlimited" (-1) or a positive number of
 * days; undefined when absent. */
export const retentionParam = p.jsonOrText(z.union([z.string(), z.number()])).optional();

export function parseRetention(value: string | number | undefined): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'realm_default') return null;
  if (value === 'unlimited') return -1;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_ID)
    return value;
  throw new RequestVariableConversionError('message_retention_days', value);
}

export const principalsParam = p
  .json(z.union([z.array(id).max(MAX_LIST), z.array(z.string().max(254)).max(MAX_LIST)]))
  .optional();

/** Each can_*_group setting as an optional parameter whose value has the shape `shape`. */
export function groupSettingParams<T>(shape: z.ZodType<T>) {
  return Object.fromEntries(
    Object.keys(STREAM_GROUP_SETTINGS).map((setting) => [setting, p.json(shape).optional()]),
  ) as Record<StreamGroupSetting, ReturnType<ReturnType<typeof p.json<T>>['optional']>>;
}

/** The group settings present among parsed parameters. */
export function pickGroupSettings<T>(
  params: Partial<Record<StreamGroupSetting, T | undefined>>,
): Partial<Record<StreamGroupSetting, T>> {
  return Object.fromEntries(
    (Object.keys(STREAM_GROUP_SETTINGS) as StreamGroupSetting[]).flatMap((setting) =>
      params[setting] === undefined ? [] : [[setting, params[setting]]],
    ),
  ) as Partial<Record<StreamGroupSetting, T>>;
}

/** include_subscribers: true, false or "partial". */
export const includeSubscribersParam = p
  .jsonOrText(z.union([z.boolean(), z.literal('partial')]))
  .default(false);
