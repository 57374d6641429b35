// Zulip's role values (UserProfile.ROLE_*), and the names the CLI accepts for them.
export const Role = {
  OWNER: 100,
  ADMINISTRATOR: 200,
  MODERATOR: 300,
  MEMBER: 400,
  GUEST: 600,
} as const;

export type RoleValue = (typeof Role)[keyof typeof Role];

export const ROLE_NAMES: Record<string, RoleValue> = {
  owner: Role.OWNER,
  admin: Role.ADMINISTRATOR,
  administrator: Role.ADMINISTRATOR,
  moderator: Role.MODERATOR,
  member: Role.MEMBER,
  guest: Role.GUEST,
};

export function isRoleValue(value: number): value is RoleValue {
  return Object.values(Role).includes(value as RoleValue);
}

/** Recipient.type values. */
/** The names of Zulip's role-based system groups, created with every organization
 * (apps/api/src/actions/system-groups.ts creates them; reads and actions both name them). */
export const SYSTEM_GROUPS = {
  OWNERS: 'role:owners',
  ADMINISTRATORS: 'role:administrators',
  MODERATORS: 'role:moderators',
  FULL_MEMBERS: 'role:fullmembers',
  MEMBERS: 'role:members',
  EVERYONE: 'role:everyone',
  EVERYONE_ON_INTERNET: 'role:internet',
  NOBODY: 'role:nobody',
} as const;

/** How a system group's name shows in a mention (Zulip's SystemGroups.GROUP_DISPLAY_NAME_MAP). */
export const SYSTEM_GROUP_DISPLAY_NAMES: Readonly<Record<string, string>> = {
  [SYSTEM_GROUPS.NOBODY]: 'Nobody',
  [SYSTEM_GROUPS.OWNERS]: 'Owners',
  [SYSTEM_GROUPS.ADMINISTRATORS]: 'Administrators',
  [SYSTEM_GROUPS.MODERATORS]: 'Moderators',
  [SYSTEM_GROUPS.FULL_MEMBERS]: 'Full members',
  [SYSTEM_GROUPS.MEMBERS]: 'Members',
  [SYSTEM_GROUPS.EVERYONE]: 'Everyone',
  [SYSTEM_GROUPS.EVERYONE_ON_INTERNET]: 'Everyone on the internet',
};

export const RecipientType = { PERSONAL: 1, STREAM: 2, DIRECT_MESSAGE_GROUP: 3 } as const;

/** Message.type values (Zulip's Message.MessageType). */
export const MessageType = { NORMAL: 1, RESOLVE_TOPIC_NOTIFICATION: 2 } as const;
export type MessageTypeValue = (typeof MessageType)[keyof typeof MessageType];

/** AuditLog.event_type values used so far (Zulip's AuditLogEventType numbers). */
export const AuditLogEvent = {
  USER_CREATED: 101,
  USER_ACTIVATED: 102,
  USER_DEACTIVATED: 103,
  USER_REACTIVATED: 104,
  USER_ROLE_CHANGED: 105,
  USER_PASSWORD_CHANGED: 122,
  USER_FULL_NAME_CHANGED: 124,
  USER_EMAIL_CHANGED: 125,
  USER_API_KEY_CHANGED: 127,
  REALM_EXPORTED: 206,
  REALM_PROPERTY_CHANGED: 207,
  REALM_CREATED: 215,
  REALM_DEFAULT_USER_SETTINGS_CHANGED: 216,
  REALM_DOMAIN_ADDED: 218,
  REALM_DOMAIN_CHANGED: 219,
  REALM_DOMAIN_REMOVED: 220,
  REALM_PLAYGROUND_ADDED: 221,
  REALM_PLAYGROUND_REMOVED: 222,
  REALM_LINKIFIER_ADDED: 223,
  REALM_LINKIFIER_CHANGED: 224,
  REALM_LINKIFIER_REMOVED: 225,
  REALM_EMOJI_ADDED: 226,
  REALM_EMOJI_REMOVED: 227,
  REALM_LINKIFIERS_REORDERED: 228,
  REALM_EXPORT_DELETED: 230,
  SUBSCRIPTION_CREATED: 301,
  SUBSCRIPTION_ACTIVATED: 302,
  SUBSCRIPTION_DEACTIVATED: 303,
  SUBSCRIPTION_PROPERTY_CHANGED: 304,
  CHANNEL_CREATED: 601,
  CHANNEL_DEACTIVATED: 602,
  CHANNEL_NAME_CHANGED: 603,
  CHANNEL_REACTIVATED: 604,
  CHANNEL_MESSAGE_RETENTION_DAYS_CHANGED: 605,
  CHANNEL_PROPERTY_CHANGED: 607,
  CHANNEL_GROUP_BASED_SETTING_CHANGED: 608,
  CHANNEL_FOLDER_CHANGED: 609,
  USER_GROUP_CREATED: 701,
  USER_GROUP_DIRECT_USER_MEMBERSHIP_ADDED: 703,
  USER_GROUP_DIRECT_USER_MEMBERSHIP_REMOVED: 704,
  USER_GROUP_DIRECT_SUBGROUP_MEMBERSHIP_ADDED: 705,
  USER_GROUP_DIRECT_SUBGROUP_MEMBERSHIP_REMOVED: 706,
  USER_GROUP_DIRECT_SUPERGROUP_MEMBERSHIP_ADDED: 707,
  USER_GROUP_DIRECT_SUPERGROUP_MEMBERSHIP_REMOVED: 708,
  USER_GROUP_NAME_CHANGED: 720,
  USER_GROUP_DESCRIPTION_CHANGED: 721,
  USER_GROUP_GROUP_BASED_SETTING_CHANGED: 722,
  USER_GROUP_DEACTIVATED: 723,
  USER_GROUP_REACTIVATED: 724,
  NAVIGATION_VIEW_CREATED: 850,
  NAVIGATION_VIEW_UPDATED: 851,
  NAVIGATION_VIEW_DELETED: 852,
  CHANNEL_FOLDER_CREATED: 901,
  CHANNEL_FOLDER_NAME_CHANGED: 902,
  CHANNEL_FOLDER_DESCRIPTION_CHANGED: 903,
  CHANNEL_FOLDER_ARCHIVED: 904,
  CHANNEL_FOLDER_UNARCHIVED: 905,
} as const;
