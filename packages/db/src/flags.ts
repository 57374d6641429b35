// UserMessage.flags bit positions, in Zulip's order (zerver/models/messages.py ALL_FLAGS), so
// the partial indexes in the initial migration keep their meaning.
export const USER_MESSAGE_FLAGS = [
  'read',
  'starred',
  'collapsed',
  'mentioned',
  'stream_wildcard_mentioned',
  'topic_wildcard_mentioned',
  'summarize_in_home',
  'summarize_in_stream',
  'force_expand',
  'force_collapse',
  'has_alert_word',
  'historical',
  'is_private',
  'active_mobile_push_notification',
] as const;

export type UserMessageFlag = (typeof USER_MESSAGE_FLAGS)[number];

export function flagBit(flag: UserMessageFlag): bigint {
  return 1n << BigInt(USER_MESSAGE_FLAGS.indexOf(flag));
}

export function flagsToBitmask(flags: Iterable<UserMessageFlag>): bigint {
  let mask = 0n;
  for (const flag of flags) mask |= flagBit(flag);
  return mask;
}

export function bitmaskToFlags(mask: bigint): UserMessageFlag[] {
  return USER_MESSAGE_FLAGS.filter((flag) => (mask & flagBit(flag)) !== 0n);
}
