export {
  createPool,
  createPrisma,
  disconnectPrisma,
  getPool,
  getPrisma,
  pingDatabase,
  type Db,
} from './client';
export { columnsOf, intArrayLiteral, query, queryDynamic, statement, type Statement } from './sql';
export { currentTransaction, outsideTransaction } from './transaction-pool';
export {
  afterAnswer,
  afterAnswerSettled,
  afterPromiseCallbacks,
  afterStatementCommitted,
  lockUserRow,
  onCommittedAuthChanges,
  runAction,
  type ActionContext,
  type AuthChangeListener,
  type RunActionOptions,
  type Tx,
} from './action';
export {
  bitmaskToFlags,
  flagBit,
  flagsToBitmask,
  USER_MESSAGE_FLAGS,
  type UserMessageFlag,
} from './flags';
export {
  AuditLogEvent,
  isRoleValue,
  MessageType,
  type MessageTypeValue,
  RecipientType,
  Role,
  ROLE_NAMES,
  type RoleValue,
  SYSTEM_GROUP_DISPLAY_NAMES,
  SYSTEM_GROUPS,
} from './roles';
export { ChangeListener, type ChangeHandlers } from './change-listener';
export { CACHE_CHANGE_CHANNEL, ChangeFeed, type ChangeFeedHandlers } from './change-feed';
export { isUniqueViolation } from './prisma-errors';
export { idsByLowerEquals } from './lookup';
export { Prisma } from '@prisma/client';
export type {
  Realm,
  User,
  Stream,
  Subscription,
  Message,
  UserGroup,
  Linkifier,
  CustomProfileField,
  RealmEmoji,
  UserTopic,
  MutedUser,
  ChannelFolder,
  NavigationView,
  RealmDomain,
  ChannelEmailAddress,
} from '@prisma/client';
