// POST /register against Zulip's own description of it: for every fetch_event_types value the
// OpenAPI file documents, every key it says is present must be there (docs/register.md says
// where each value comes from). The checklist is read from ../shared/reference at test time,
// never copied into the project. Then: the values follow the data Parley stores.
import { existsSync, readFileSync } from 'node:fs';

import { parse } from 'yaml';
import { getPrisma, Role, type User, SYSTEM_GROUPS } from '@parley/db';
import type { QueuedEvent } from '@parley/events';
import { applyEvent, refreshAfterEvents, type StateOptions } from '../src/lib/initial-state';
import { ensureSystemBot } from '../src/actions/system-bots';
import { applyRealmEvent } from '../src/lib/realm-state';
import { STOP_WORDS } from '../src/lib/stop-words';
import {
  as,
  createChannel,
  createTestRealm,
  createTestUser,
  expectSuccess,
  type TestRealm,
} from './helpers';
import { sharedPath } from './shared-dir';

// ---- The checklist, extracted from Zulip's OpenAPI description ----------------------------
// The response schema has no `required` list: presence is only in each description's first
// sentence, "Present if `X` is present in `fetch_event_types`." (or, for unread_msgs, "Present
// if `X` and `Y` are both present ..."). Keys without such a sentence are either always sent
// or one of four the wording leaves unclassified.

const SPEC_PATH = sharedPath('reference', 'zulip-openapi.yaml');

type Node = Record<string, unknown>;

interface Checklist {
  propertyCount: number;
  /** Keys by fetch type; "message+update_message_flags" for keys needing both. */
  byType: Map<string, string[]>;
  /** Keys whose presence depends on more than the type, with the condition. */
  conditional: Map<string, 'demo organization' | 'user_settings_object'>;
  always: string[];
  unclassified: string[];
  /** Properties of the response's nested objects, by key. */
  nested: Map<string, string[]>;
  /** Properties of the items of array-valued keys. */
  itemProps: Map<string, string[]>;
}

function extractChecklist(): Checklist {
  if (!existsSync(SPEC_PATH))
    throw new Error(
      `Zulip's OpenAPI description is missing: looked for ${SPEC_PATH} (the project's ` +
        `../shared/reference/zulip-openapi.yaml). This test needs it to know which keys ` +
        `POST /register must return.`,
    );
  const doc = parse(readFileSync(SPEC_PATH, 'utf8'), { maxAliasCount: -1 }) as Node;
  const schemas = (doc.components as Node).schemas as Record<string, Node>;
  const deref = (node: Node): Node => {
    let current = node;
    while (typeof current.$ref === 'string' && Object.keys(current).length === 1)
      current = schemas[current.$ref.split('/').pop()!]!;
    return current;
  };
  const props = (node: Node, into = new Map<string, Node>()): Map<string, Node> => {
    const n = deref(node);
    for (const part of (n.allOf as Node[] | undefined) ?? []) props(part, into);
    for (const [name, p] of Object.entries((n.properties as Record<string, Node>) ?? {}))
      if (!into.has(name)) into.set(name, p);
    return into;
  };
  const register = ((doc.paths as Node)['/register'] as Node).post as Node;
  const response = ((register.responses as Node)['200'] as Node).content as Node;
  const properties = props((response['application/json'] as Node).schema as Node);

  const both = /Present if `([^`]+)` and `([^`]+)` are both present in `(?:fetch_)?event_types`/;
  const one = /Present if `([^`]+)` is present in `fetch_event_types`/;
  const checklist: Checklist = {
    propertyCount: properties.size,
    byType: new Map(),
    conditional: new Map(),
    always: [],
    unclassified: [],
    nested: new Map(),
    itemProps: new Map(),
  };
  const add = (type: string, key: string) =>
    checklist.byType.set(type, [...(checklist.byType.get(type) ?? []), key]);
  for (const [name, p] of properties) {
    const description = String(p.description ?? deref(p).description ?? '')
      .split(/\s+/)
      .join(' ');
    const pair = both.exec(description);
    const single = one.exec(description);
    if (pair) add(`${pair[1]}+${pair[2]}`, name);
    else if (single) {
      add(single[1]!, name);
      const tail = description.slice(single.index + single[0].length);
      if (tail.includes('demo organization')) checklist.conditional.set(name, 'demo organization');
      if (tail.includes('user_settings_object'))
        checklist.conditional.set(name, 'user_settings_object');
    } else if (['result', 'msg', 'ignored_parameters_unsupported'].includes(name)) continue;
    else if (
      ['queue_id', 'last_event_id', 'zulip_merge_base'].includes(name) ||
      /this is always present/i.test(description)
    )
      checklist.always.push(name);
    else checklist.unclassified.push(name);

    const schema = deref(p);
    const nested = props(schema);
    if (nested.size > 0) checklist.nested.set(name, [...nested.keys()]);
    if (schema.type === 'array' && schema.items) {
      const items = props(schema.items as Node);
      if (items.size > 0) checklist.itemProps.set(name, [...items.keys()]);
    }
  }
  return checklist;
}

const checklist = extractChecklist();

/** Where Zulip's source (zerver/lib/events.py) sends the keys the wording leaves unclassified;
 * receives_typing_notifications is never sent at the top level (it lives in user_settings). */
const UNCLASSIFIED_TYPES: Record<string, string | null> = {
  drafts: 'drafts',
  max_bulk_new_subscription_messages: 'realm',
  max_reminder_note_length: 'realm',
  receives_typing_notifications: null,
};
for (const [key, type] of Object.entries(UNCLASSIFIED_TYPES))
  if (type && checklist.unclassified.includes(key))
    checklist.byType.set(type, [...(checklist.byType.get(type) ?? []), key]);

/** Documented keys Parley leaves out, each for a reason. Nothing else may be missing. */
const LEGACY_SETTINGS_TYPES = ['update_display_settings', 'update_global_notifications'];
const EXCEPTIONS: { keys: string[]; reason: string }[] = [
  {
    keys: LEGACY_SETTINGS_TYPES.flatMap((type) => checklist.byType.get(type) ?? []),
    reason:
      'the legacy top-level copies of the user settings (fetch types update_display_settings ' +
      'and update_global_notifications), removed at feature level 439; Parley advertises 496 ' +
      'and sends them only inside user_settings',
  },
  {
    keys: ['realm_is_zephyr_mirror_realm'],
    reason: 'removed at feature level 426',
  },
  {
    keys: ['receives_typing_notifications'],
    reason:
      'documented without a condition, but Zulip never sends it at the top level: it is a ' +
      'user setting, inside user_settings and realm_user_settings_defaults',
  },
  {
    keys: ['demo_organization_scheduled_deletion_date'],
    reason: 'sent only for demo organizations, which Parley does not have',
  },
];
const excepted = new Set(EXCEPTIONS.flatMap((exception) => exception.keys));

// ---- Tests ------------------------------------------------------------------------------

let org: TestRealm;
let member: User;

beforeAll(async () => {
  org = await createTestRealm();
  member = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Mia Member' });
});

async function register(user: User, params: Record<string, unknown>) {
  return expectSuccess(await as(user, org.host).post('/register', params));
}

describe('the checklist read from zulip-openapi.yaml', () => {
  it('has the shape the extraction expects', () => {
    expect(checklist.propertyCount).toBe(244);
    const realmKeys = checklist.byType.get('realm')!;
    expect(realmKeys.filter((key) => !(key in UNCLASSIFIED_TYPES))).toHaveLength(133);
    expect(checklist.unclassified.sort()).toEqual(Object.keys(UNCLASSIFIED_TYPES).sort());
    expect(checklist.always.sort()).toEqual([
      'last_event_id',
      'queue_id',
      'zulip_feature_level',
      'zulip_merge_base',
      'zulip_version',
    ]);
    // 40 documented fetch types, the message+update_message_flags pair, and drafts.
    expect(checklist.byType.size).toBe(42);
  });

  it('excepts exactly the 36 legacy settings keys and three others', () => {
    const legacy = EXCEPTIONS[0]!.keys;
    expect(legacy).toHaveLength(36);
    for (const key of legacy) expect(checklist.conditional.get(key)).toBe('user_settings_object');
    expect(checklist.conditional.get('demo_organization_scheduled_deletion_date')).toBe(
      'demo organization',
    );
    expect(excepted.size).toBe(39);
  });
});

describe('POST /register returns every documented key', () => {
  const types = [...checklist.byType.keys()].sort();

  it.each(types)('for fetch_event_types %s', async (type) => {
    const fetch = type.split('+');
    const state = await register(member, { fetch_event_types: fetch, event_types: fetch });
    const expected = [...checklist.always, ...checklist.byType.get(type)!];
    const missing = expected.filter((key) => !excepted.has(key) && !(key in state));
    expect(missing).toEqual([]);
    // The exceptions hold: each excepted key really is left out.
    const sent = expected.filter((key) => excepted.has(key) && key in state);
    expect(sent).toEqual([]);
  });

  it('fills the nested objects and the user group objects', async () => {
    const state = await register(member, {
      fetch_event_types: [
        'user_settings',
        'realm_user_settings_defaults',
        'message',
        'update_message_flags',
        'realm_billing',
        'realm',
        'realm_user_groups',
      ],
    });
    const missingIn = (key: string, value: unknown, wanted: string[]) =>
      wanted.filter((name) => !(name in (value as object))).map((name) => `${key}.${name}`);
    const missing = [
      'user_settings',
      'realm_user_settings_defaults',
      'unread_msgs',
      'realm_billing',
      'server_supported_permission_settings',
    ].flatMap((key) => missingIn(key, state[key], checklist.nested.get(key)!));
    const groups = state.realm_user_groups as Record<string, unknown>[];
    expect(groups.length).toBeGreaterThan(0);
    for (const group of groups)
      missing.push(
        ...missingIn('realm_user_groups[]', group, checklist.itemProps.get('realm_user_groups')!),
      );
    expect(missing).toEqual([]);
    // user_settings has everything realm_user_settings_defaults has, plus the timezone.
    expect(checklist.nested.get('user_settings')).toHaveLength(65);
    expect(checklist.nested.get('realm_user_settings_defaults')).toHaveLength(64);
  });

  it('sends every section when the client names no types', async () => {
    const state = await register(member, {});
    const missing = [...checklist.byType.values()]
      .flat()
      .filter((key) => !excepted.has(key) && !(key in state));
    expect(missing).toEqual([]);
  });
});

describe('POST /register values come from the data Parley stores', () => {
  it('reports the organization settings of the Realm row', async () => {
    const realm = await createTestRealm('Values org');
    const groups = new Map(
      (
        await getPrisma().userGroup.findMany({
          where: { realmId: realm.realm.id, isSystemGroup: true },
        })
      ).map((g) => [g.name!, g.id]),
    );
    await getPrisma().realm.update({
      where: { id: realm.realm.id },
      data: {
        description: 'We **talk**.',
        inviteRequired: false,
        waitingPeriodThreshold: 3,
        messageContentEditLimitSeconds: null,
        editHistoryVisibilityPolicy: 2,
        mandatoryTopics: true,
        passwordAuthEnabled: false,
        defaultEmailAddressVisibility: 3,
        canCreatePublicChannelGroupId: groups.get(SYSTEM_GROUPS.ADMINISTRATORS)!,
      },
    });
    const user = await createTestUser(realm.realm, Role.MEMBER);
    const state = expectSuccess(
      await as(user, realm.host).post('/register', {
        fetch_event_types: ['realm', 'realm_user', 'realm_user_settings_defaults'],
      }),
    );
    expect(state).toMatchObject({
      realm_name: 'Values org',
      realm_description: 'We **talk**.',
      realm_invite_required: false,
      realm_waiting_period_threshold: 3,
      realm_message_content_edit_limit_seconds: null,
      realm_message_edit_history_visibility_policy: 'moves',
      realm_allow_edit_history: true,
      realm_mandatory_topics: true,
      realm_topics_policy: 'disable_empty_topic',
      realm_password_auth_enabled: false,
      realm_email_auth_enabled: false,
      realm_authentication_methods: { Email: { enabled: false, available: true } },
      realm_can_create_public_channel_group: groups.get(SYSTEM_GROUPS.ADMINISTRATORS),
      realm_create_public_stream_policy: 2,
      // Not stored: Zulip's defaults, as system group ids of this organization.
      realm_can_create_private_channel_group: groups.get(SYSTEM_GROUPS.MEMBERS),
      realm_can_mention_many_users_group: groups.get(SYSTEM_GROUPS.ADMINISTRATORS),
      realm_wildcard_mention_policy: 5,
      realm_can_delete_own_message_group: groups.get(SYSTEM_GROUPS.EVERYONE),
      realm_can_invite_users_group: groups.get(SYSTEM_GROUPS.MEMBERS),
      // The member cannot create public channels any more, but still private ones.
      can_create_public_streams: false,
      can_create_private_streams: true,
      can_create_streams: true,
      can_create_web_public_streams: false,
      can_invite_others_to_realm: true,
      can_subscribe_other_users: true,
      is_moderator: false,
      realm_user_settings_defaults: { email_address_visibility: 3 },
    });
    expect(state.realm_date_created).toBe(Math.floor(realm.realm.dateCreated.getTime() / 1000));
  });

  it('gives anonymous group settings as their members and subgroups', async () => {
    const realm = await createTestRealm();
    const admins = await getPrisma().userGroup.findFirstOrThrow({
      where: { realmId: realm.realm.id, name: SYSTEM_GROUPS.ADMINISTRATORS },
    });
    const user = await createTestUser(realm.realm, Role.MEMBER);
    const anonymous = await getPrisma().userGroup.create({
      data: {
        realmId: realm.realm.id,
        members: { create: [{ userId: user.id }] },
        subgroups: { create: [{ subgroupId: admins.id }] },
      },
    });
    await getPrisma().realm.update({
      where: { id: realm.realm.id },
      data: { canAddSubscribersGroupId: anonymous.id },
    });
    const state = expectSuccess(
      await as(user, realm.host).post('/register', {
        fetch_event_types: ['realm', 'realm_user', 'realm_user_groups'],
      }),
    );
    expect(state.realm_can_add_subscribers_group).toEqual({
      direct_members: [user.id],
      direct_subgroups: [admins.id],
    });
    expect(state.can_subscribe_other_users).toBe(true);
    // Anonymous groups are not listed.
    const groups = state.realm_user_groups as { id: number }[];
    expect(groups.map((g) => g.id)).not.toContain(anonymous.id);
  });

  it('lists the system groups with their direct members and subgroups', async () => {
    const realm = await createTestRealm();
    const moderator = await createTestUser(realm.realm, Role.MODERATOR);
    const state = expectSuccess(
      await as(moderator, realm.host).post('/register', {
        fetch_event_types: ['realm_user_groups'],
      }),
    );
    const groups = state.realm_user_groups as Record<string, unknown>[];
    const byName = new Map(groups.map((g) => [g.name as string, g]));
    expect([...byName.keys()].sort()).toEqual(Object.values(SYSTEM_GROUPS).sort());
    expect(groups.map((g) => g.id)).toEqual(
      [...groups.map((g) => g.id as number)].sort((a, b) => a - b),
    );
    const nobody = byName.get(SYSTEM_GROUPS.NOBODY)!.id;
    expect(byName.get(SYSTEM_GROUPS.MODERATORS)).toMatchObject({
      members: [moderator.id],
      direct_subgroup_ids: [byName.get(SYSTEM_GROUPS.ADMINISTRATORS)!.id],
      is_system_group: true,
      creator_id: null,
      deactivated: false,
      description: 'Moderators of this organization, including administrators',
      can_add_members_group: nobody,
      can_join_group: nobody,
      can_leave_group: nobody,
      can_manage_group: nobody,
      can_mention_group: nobody,
      can_remove_members_group: nobody,
    });
    expect(byName.get(SYSTEM_GROUPS.OWNERS)!.members).toEqual([realm.owner.id]);
    expect(state.realm_user_groups).toEqual(
      expect.arrayContaining([expect.objectContaining({ date_created: expect.any(Number) })]),
    );
  });

  it('lists starred messages and recent direct-message conversations', async () => {
    const realm = await createTestRealm();
    const alice = await createTestUser(realm.realm, Role.MEMBER);
    const bob = await createTestUser(realm.realm, Role.MEMBER);
    const send = async (from: User, to: number[]) =>
      expectSuccess(
        await as(from, realm.host).post('/messages', { type: 'direct', to, content: 'hi' }),
      ).id as number;
    const toBob = await send(alice, [bob.id]);
    const fromBob = await send(bob, [alice.id]);
    const toSelf = await send(alice, [alice.id]);
    const group = await send(bob, [alice.id, realm.owner.id]);
    expectSuccess(
      await as(alice, realm.host).post('/messages/flags', {
        messages: [fromBob, toBob],
        op: 'add',
        flag: 'starred',
      }),
    );
    const state = expectSuccess(
      await as(alice, realm.host).post('/register', {
        fetch_event_types: ['starred_messages', 'recent_private_conversations'],
      }),
    );
    expect(state.starred_messages).toEqual([toBob, fromBob]);
    expect(state.recent_private_conversations).toEqual([
      { max_message_id: group, user_ids: [realm.owner.id, bob.id].sort((a, b) => a - b) },
      { max_message_id: toSelf, user_ids: [] },
      { max_message_id: fromBob, user_ids: [bob.id] },
    ]);
    const bobs = expectSuccess(
      await as(bob, realm.host).post('/register', {
        fetch_event_types: ['starred_messages', 'recent_private_conversations'],
      }),
    );
    expect(bobs.starred_messages).toEqual([]);
    expect(bobs.recent_private_conversations).toEqual([
      { max_message_id: group, user_ids: [alice.id, realm.owner.id].sort((a, b) => a - b) },
      { max_message_id: fromBob, user_ids: [alice.id] },
    ]);
  });

  it('lists users in id order without is_active, and marks the system bots', async () => {
    const realm = await createTestRealm();
    await createTestUser(realm.realm, Role.MEMBER);
    const gone = await createTestUser(realm.realm, Role.MEMBER);
    await getPrisma().user.update({ where: { id: gone.id }, data: { isActive: false } });
    const notificationBot = await ensureSystemBot(realm.realm, 'notification');
    const state = expectSuccess(
      await as(realm.owner, realm.host).post('/register', { fetch_event_types: ['realm_user'] }),
    );
    for (const key of ['realm_users', 'realm_non_active_users']) {
      const people = state[key] as Record<string, unknown>[];
      const ids = people.map((person) => person.user_id as number);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(people.filter((person) => 'is_active' in person)).toEqual([]);
    }
    expect((state.realm_non_active_users as { user_id: number }[]).map((u) => u.user_id)).toEqual([
      gone.id,
    ]);
    const bots = (state.realm_users as Record<string, unknown>[]).filter(
      (person) => person.is_system_bot === true,
    );
    expect(bots.map((bot) => bot.user_id)).toEqual([notificationBot.id]);
  });

  it("reads a channel's unset notification settings as the user's defaults, unless the client takes null", async () => {
    const realm = await createTestRealm();
    const alice = await createTestUser(realm.realm, Role.MEMBER);
    await createChannel(realm.realm, realm.owner, 'quiet corner', [alice]);
    expectSuccess(
      await as(alice, realm.host).patch('/settings', {
        enable_stream_desktop_notifications: true,
        enable_stream_push_notifications: false,
      }),
    );
    const subscription = async (capabilities: Record<string, boolean>) => {
      const state = expectSuccess(
        await as(alice, realm.host).post('/register', {
          fetch_event_types: ['subscription'],
          client_capabilities: capabilities,
        }),
      );
      return (state.subscriptions as Record<string, unknown>[]).find(
        (sub) => sub.name === 'quiet corner',
      )!;
    };
    expect(await subscription({})).toMatchObject({
      desktop_notifications: true,
      push_notifications: false,
      audible_notifications: false,
      email_notifications: false,
      wildcard_mentions_notify: null,
    });
    expect(await subscription({ notification_settings_null: true })).toMatchObject({
      desktop_notifications: null,
      push_notifications: null,
      audible_notifications: null,
      email_notifications: null,
    });
  });

  it('folds raced GIF rating and login-method changes into every key that says them', () => {
    const state: Record<string, unknown> = {
      realm_name: 'x',
      realm_giphy_rating: 1,
      realm_gif_rating_policy: 1,
      realm_password_auth_enabled: true,
      realm_email_auth_enabled: true,
    };
    applyRealmEvent(state, { type: 'realm', op: 'update', property: 'giphy_rating', value: 3 });
    applyRealmEvent(state, {
      type: 'realm',
      op: 'update_dict',
      property: 'default',
      data: { authentication_methods: { Email: { enabled: false, available: true } } },
    });
    expect(state).toMatchObject({
      realm_giphy_rating: 3,
      realm_gif_rating_policy: 3,
      realm_password_auth_enabled: false,
      realm_email_auth_enabled: false,
    });
  });

  it('sends as stop words only words the database search ignores', async () => {
    const indexed = await getPrisma().$queryRaw<{ word: string }[]>`
      SELECT word FROM unnest(${[...STOP_WORDS]}::text[]) AS word
      WHERE to_tsvector('english', word) <> ''::tsvector`;
    expect(indexed).toEqual([]);
    const state = await register(member, { fetch_event_types: ['stop_words'] });
    expect(state.stop_words).toEqual(STOP_WORDS);
  });

  it('folds raced direct messages and stars into the state', () => {
    const state: Record<string, unknown> = {
      starred_messages: [5],
      recent_private_conversations: [
        { max_message_id: 9, user_ids: [2] },
        { max_message_id: 4, user_ids: [3] },
      ],
    };
    const options = {} as StateOptions;
    const me = { id: 1 } as User;
    const event = (fields: Record<string, unknown>) => ({ id: 0, ...fields }) as QueuedEvent;
    applyEvent(
      state,
      event({
        type: 'message',
        message: { id: 12, type: 'private', display_recipient: [{ id: 1 }, { id: 3 }] },
        flags: [],
      }),
      me,
      options,
    );
    applyEvent(
      state,
      event({ type: 'update_message_flags', op: 'add', flag: 'starred', messages: [12, 2] }),
      me,
      options,
    );
    applyEvent(
      state,
      event({ type: 'update_message_flags', op: 'remove', flag: 'starred', messages: [5] }),
      me,
      options,
    );
    expect(state.recent_private_conversations).toEqual([
      { max_message_id: 12, user_ids: [3] },
      { max_message_id: 9, user_ids: [2] },
    ]);
    expect(state.starred_messages).toEqual([2, 12]);
  });

  it('reads again the sections a raced deletion or role change invalidates', async () => {
    const realm = await createTestRealm();
    const alice = await createTestUser(realm.realm, Role.MEMBER);
    const first = expectSuccess(
      await as(alice, realm.host).post('/messages', {
        type: 'direct',
        to: [realm.owner.id],
        content: 'one',
      }),
    ).id as number;
    const second = expectSuccess(
      await as(alice, realm.host).post('/messages', {
        type: 'direct',
        to: [realm.owner.id],
        content: 'two',
      }),
    ).id as number;
    const fetched = expectSuccess(
      await as(alice, realm.host).post('/register', {
        fetch_event_types: ['recent_private_conversations', 'realm_user', 'realm_user_groups'],
      }),
    );
    expect(fetched.recent_private_conversations).toEqual([
      { max_message_id: second, user_ids: [realm.owner.id] },
    ]);
    expect(fetched.can_create_web_public_streams).toBe(false);
    // As if these had raced the registration: the newest message deleted, alice made owner.
    expectSuccess(await as(alice, realm.host).delete(`/messages/${second}`));
    expectSuccess(await as(realm.owner, realm.host).patch(`/users/${alice.id}`, { role: 100 }));
    await getPrisma().realm.update({
      where: { id: realm.realm.id },
      data: { webPublicAccessEnabled: true },
    });
    const raced = [
      { id: 1, type: 'delete_message', message_type: 'private', message_ids: [second] },
      { id: 2, type: 'realm_user', op: 'update', person: { user_id: alice.id, role: 100 } },
    ] as QueuedEvent[];
    const options = { includeDeactivatedGroups: false } as StateOptions;
    const refreshedRealm = await getPrisma().realm.findUniqueOrThrow({
      where: { id: realm.realm.id },
    });
    for (const event of raced) applyEvent(fetched, event, alice, options);
    await refreshAfterEvents(fetched, raced, alice, refreshedRealm, options);
    expect(fetched.recent_private_conversations).toEqual([
      { max_message_id: first, user_ids: [realm.owner.id] },
    ]);
    expect(fetched).toMatchObject({ is_owner: true, can_create_web_public_streams: true });
    const owners = (fetched.realm_user_groups as { name: string; members: number[] }[]).find(
      (g) => g.name === SYSTEM_GROUPS.OWNERS,
    )!;
    expect(owners.members).toEqual([realm.owner.id, alice.id].sort((a, b) => a - b));
  });
});

describe('unread_msgs folding of raced events', () => {
  it('adds messages marked unread from their message_details, and drops deleted ones', () => {
    const state = {
      unread_msgs: {
        count: 1,
        pms: [{ other_user_id: 7, sender_id: 7, unread_message_ids: [10] }],
        streams: [],
        huddles: [],
        mentions: [],
        old_unreads_missing: false,
      },
    };
    const user = { id: 1 } as User;
    const options = {} as StateOptions;
    const event = (fields: Record<string, unknown>) => ({ id: 0, ...fields }) as QueuedEvent;
    applyEvent(
      state,
      event({
        type: 'update_message_flags',
        op: 'remove',
        flag: 'read',
        messages: [11, 12, 13],
        message_details: {
          '11': {
            type: 'stream',
            stream_id: 5,
            topic: 'T',
            unmuted_stream_msg: true,
            mentioned: true,
          },
          '12': { type: 'private', user_ids: [8, 9] },
          '13': { type: 'private', user_ids: [] },
        },
      }),
      user,
      options,
    );
    expect(state.unread_msgs).toMatchObject({
      count: 4,
      streams: [{ stream_id: 5, topic: 'T', unread_message_ids: [11] }],
      huddles: [{ user_ids_string: '1,8,9', unread_message_ids: [12] }],
      mentions: [11],
    });
    // Sorted by the other user, as Zulip's aggregate_pms.
    expect(state.unread_msgs.pms).toEqual([
      { other_user_id: 1, sender_id: 1, unread_message_ids: [13] },
      { other_user_id: 7, sender_id: 7, unread_message_ids: [10] },
    ]);
    applyEvent(state, event({ type: 'delete_message', message_ids: [10, 11] }), user, options);
    expect(state.unread_msgs).toMatchObject({ count: 2, mentions: [] });
  });
});
