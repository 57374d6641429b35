// PATCH /realm (Zulip's update_realm): every setting it accepts, its validation, who may change
// what, the `realm` events, /register and /server_settings after a change, and the permissions
// the stored group settings decide, end to end.
import type { Response } from 'supertest';
import { getPrisma, Role, type Realm, type User } from '@parley/db';
import { REALM_PERMISSION_SETTINGS } from '../src/lib/permission-settings';
import { applyEvent } from '../src/lib/initial-state';
import { REALM_GROUP_COLUMNS } from '../src/lib/realm-state';
import {
  api,
  as,
  captureEvents,
  createChannel,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';
import { createMessageOrg, png, send, type MessageOrg } from './message-helpers';
import { permissionMatrix, type MatrixContext, type Operation } from './permission-matrix';

const prisma = () => getPrisma();
const realmRow = (realm: Pick<Realm, 'id'>) =>
  prisma().realm.findUniqueOrThrow({ where: { id: realm.id } });

async function systemGroup(realm: Pick<Realm, 'id'>, name: string): Promise<number> {
  return (await prisma().userGroup.findFirstOrThrow({ where: { realmId: realm.id, name } })).id;
}

async function activeUserIds(realm: Pick<Realm, 'id'>): Promise<number[]> {
  return (
    await prisma().user.findMany({
      where: { realmId: realm.id, isActive: true },
      select: { id: true },
      orderBy: { id: 'asc' },
    })
  ).map((user) => user.id);
}

const patchRealm = (user: User, org: TestRealm, form: Record<string, unknown>) =>
  as(user, org.host).patch('/realm', form);

const setGroup = async (org: TestRealm, setting: string, groupName: string) =>
  expectSuccess(
    await patchRealm(org.owner, org, {
      [setting]: { new: await systemGroup(org.realm, groupName) },
    }),
  );

async function registerState(user: User, host: string, types = ['realm', 'realm_user']) {
  return expectSuccess(
    await as(user, host, { atOnce: true }).post('/register', { fetch_event_types: types }),
  );
}

describe('PATCH /realm: scalar settings', () => {
  let org: TestRealm;
  let member: User;
  beforeAll(async () => {
    org = await createTestRealm('Scalar Org');
    member = await createTestUser(org.realm, Role.MEMBER);
  });

  // [parameter, value sent, response data, event, /register key, /register value]
  const cases: [string, unknown, unknown, Record<string, unknown>, string, unknown][] = [
    [
      'name',
      'Renamed Org',
      'updated',
      { op: 'update', property: 'name', value: 'Renamed Org' },
      'realm_name',
      'Renamed Org',
    ],
    [
      'description',
      'About **us**',
      'updated',
      { op: 'update', property: 'description', value: 'About **us**' },
      'realm_description',
      'About **us**',
    ],
    [
      'allow_message_editing',
      false,
      false,
      { op: 'update_dict', property: 'default', data: { allow_message_editing: false } },
      'realm_allow_message_editing',
      false,
    ],
    [
      'message_content_edit_limit_seconds',
      'unlimited',
      null,
      {
        op: 'update_dict',
        property: 'default',
        data: { message_content_edit_limit_seconds: null },
      },
      'realm_message_content_edit_limit_seconds',
      null,
    ],
    [
      'message_content_delete_limit_seconds',
      3600,
      3600,
      { op: 'update', property: 'message_content_delete_limit_seconds', value: 3600 },
      'realm_message_content_delete_limit_seconds',
      3600,
    ],
    [
      'move_messages_within_stream_limit_seconds',
      'unlimited',
      null,
      { op: 'update', property: 'move_messages_within_stream_limit_seconds', value: null },
      'realm_move_messages_within_stream_limit_seconds',
      null,
    ],
    [
      'move_messages_between_streams_limit_seconds',
      86400,
      86400,
      { op: 'update', property: 'move_messages_between_streams_limit_seconds', value: 86400 },
      'realm_move_messages_between_streams_limit_seconds',
      86400,
    ],
    [
      'message_edit_history_visibility_policy',
      'moves',
      2,
      { op: 'update', property: 'message_edit_history_visibility_policy', value: 'moves' },
      'realm_message_edit_history_visibility_policy',
      'moves',
    ],
    [
      'invite_required',
      false,
      false,
      { op: 'update', property: 'invite_required', value: false },
      'realm_invite_required',
      false,
    ],
    [
      'emails_restricted_to_domains',
      true,
      true,
      { op: 'update', property: 'emails_restricted_to_domains', value: true },
      'realm_emails_restricted_to_domains',
      true,
    ],
    [
      'disallow_disposable_email_addresses',
      false,
      false,
      { op: 'update', property: 'disallow_disposable_email_addresses', value: false },
      'realm_disallow_disposable_email_addresses',
      false,
    ],
    [
      'waiting_period_threshold',
      3,
      3,
      { op: 'update', property: 'waiting_period_threshold', value: 3 },
      'realm_waiting_period_threshold',
      3,
    ],
    [
      'default_language',
      'de',
      'updated',
      { op: 'update', property: 'default_language', value: 'de' },
      'realm_default_language',
      'de',
    ],
    [
      'topics_policy',
      'disable_empty_topic',
      3,
      {
        op: 'update_dict',
        property: 'default',
        data: { topics_policy: 'disable_empty_topic', mandatory_topics: true },
      },
      'realm_topics_policy',
      'disable_empty_topic',
    ],
    [
      'message_retention_days',
      30,
      30,
      { op: 'update', property: 'message_retention_days', value: 30 },
      'realm_message_retention_days',
      30,
    ],
    [
      'enable_spectator_access',
      true,
      true,
      { op: 'update', property: 'enable_spectator_access', value: true },
      'realm_enable_spectator_access',
      true,
    ],
    [
      'avatar_changes_disabled',
      true,
      true,
      { op: 'update', property: 'avatar_changes_disabled', value: true },
      'realm_avatar_changes_disabled',
      true,
    ],
    [
      'name_changes_disabled',
      true,
      true,
      { op: 'update', property: 'name_changes_disabled', value: true },
      'realm_name_changes_disabled',
      true,
    ],
    [
      'email_changes_disabled',
      true,
      true,
      { op: 'update', property: 'email_changes_disabled', value: true },
      'realm_email_changes_disabled',
      true,
    ],
    [
      'require_unique_names',
      true,
      true,
      { op: 'update', property: 'require_unique_names', value: true },
      'realm_require_unique_names',
      true,
    ],
    [
      'send_welcome_emails',
      false,
      false,
      { op: 'update', property: 'send_welcome_emails', value: false },
      'realm_send_welcome_emails',
      false,
    ],
    [
      'enable_read_receipts',
      false,
      false,
      { op: 'update', property: 'enable_read_receipts', value: false },
      'realm_enable_read_receipts',
      false,
    ],
    [
      'video_chat_provider',
      0,
      0,
      { op: 'update', property: 'video_chat_provider', value: 0 },
      'realm_video_chat_provider',
      0,
    ],
    [
      'jitsi_server_url',
      'https://jitsi.example.com',
      'updated',
      { op: 'update', property: 'jitsi_server_url', value: 'https://jitsi.example.com' },
      'realm_jitsi_server_url',
      'https://jitsi.example.com',
    ],
    [
      'welcome_message_custom_text',
      'Welcome aboard!',
      'updated',
      { op: 'update', property: 'welcome_message_custom_text', value: 'Welcome aboard!' },
      'realm_welcome_message_custom_text',
      'Welcome aboard!',
    ],
    ...(
      [
        ['digest_emails_enabled', true],
        ['enable_guest_user_dm_warning', false],
        ['enable_guest_user_indicator', false],
        ['inline_image_preview', false],
        ['inline_url_embed_preview', true],
        ['message_content_allowed_in_email_notifications', false],
        ['require_e2ee_push_notifications', true],
        ['send_channel_events_messages', true],
        ['want_advertise_in_communities_directory', true],
        ['digest_weekday', 4],
        ['giphy_rating', 3],
        ['org_type', 20],
      ] as const
    ).map(
      ([param, value]): [string, unknown, unknown, Record<string, unknown>, string, unknown] => [
        param,
        value,
        value,
        { op: 'update', property: param, value },
        `realm_${param}`,
        value,
      ],
    ),
    [
      'default_code_block_language',
      'python',
      'updated',
      { op: 'update', property: 'default_code_block_language', value: 'python' },
      'realm_default_code_block_language',
      'python',
    ],
  ];

  it.each(cases)(
    'changes %s, tells everyone and shows it in /register',
    async (param, value, data, event, key, registered) => {
      let res: Response | undefined;
      const published = await captureEvents(org.realm.id, async () => {
        res = await patchRealm(org.owner, org, { [param]: value });
      });
      expect(expectSuccess(res!)).toEqual({ result: 'success', msg: '', [param]: data });
      // (A new waiting period also moves members in or out of full members: tested below.)
      expect(published.filter((p) => p.event.type === 'realm')).toEqual([
        { event: { type: 'realm', ...event }, users: await activeUserIds(org.realm) },
      ]);
      // The next request sees the change at once (the cached organization is dropped).
      expect((await registerState(member, org.host))[key]).toEqual(registered);
      // Setting the same value again changes nothing and tells nobody (Zulip answers with
      // the two enum settings whenever they are sent).
      const again = await captureEvents(org.realm.id, async () => {
        expect(expectSuccess(await patchRealm(org.owner, org, { [param]: value }))).toEqual({
          result: 'success',
          msg: '',
          ...(['topics_policy', 'message_edit_history_visibility_policy'].includes(param)
            ? { [param]: data }
            : {}),
        });
      });
      expect(again).toEqual([]);
    },
  );

  it('records each change in the audit log with the old and new values', async () => {
    const { realm, owner, host } = await createTestRealm();
    expectSuccess(
      await as(owner, host).patch('/realm', {
        message_content_edit_limit_seconds: 1200,
        message_edit_history_visibility_policy: 'none',
      }),
    );
    const rows = await prisma().auditLog.findMany({
      where: { realmId: realm.id, eventType: 207 },
      orderBy: { id: 'asc' },
    });
    expect(rows.map((row) => [row.actingUserId, row.extraData])).toEqual([
      [
        owner.id,
        { old_value: 600, new_value: 1200, property: 'message_content_edit_limit_seconds' },
      ],
      [
        owner.id,
        { old_value: 'all', new_value: 'none', property: 'message_edit_history_visibility_policy' },
      ],
    ]);
  });

  it('accepts the pre-392 mandatory_topics and "default" for the Jitsi server', async () => {
    const { realm, owner, host } = await createTestRealm();
    expectSuccess(
      await as(owner, host).patch('/realm', {
        mandatory_topics: true,
        jitsi_server_url: 'https://a.example',
      }),
    );
    expect(await realmRow(realm)).toMatchObject({
      mandatoryTopics: true,
      jitsiServerUrl: 'https://a.example',
    });
    const published = await captureEvents(realm.id, async () => {
      expectSuccess(await as(owner, host).patch('/realm', { jitsi_server_url: 'default' }));
    });
    expect(published.map((p) => p.event)).toEqual([
      { type: 'realm', op: 'update', property: 'jitsi_server_url', value: null },
    ]);
    const state = await registerState(owner, host);
    expect(state.realm_mandatory_topics).toBe(true);
    expect(state.realm_jitsi_server_url).toBeNull();
  });

  it('accepts welcome_message_custom_text of exactly 8000 code points', async () => {
    const { realm, owner, host } = await createTestRealm();
    const text = '😀'.repeat(8000);
    expectSuccess(await as(owner, host).patch('/realm', { welcome_message_custom_text: text }));
    expect((await realmRow(realm)).welcomeMessageCustomText).toBe(text);
  });

  it('lists unknown parameters as ignored', async () => {
    const { owner, host } = await createTestRealm();
    const body = expectSuccess(await as(owner, host).patch('/realm', { name: 'Other', zebra: 1 }));
    expect(body.ignored_parameters_unsupported).toEqual(['zebra']);
  });

  it('updates full members when the waiting period changes', async () => {
    const { realm, owner, host } = await createTestRealm();
    const newcomer = await createTestUser(realm, Role.MEMBER);
    const veteran = await createTestUser(realm, Role.MEMBER);
    await prisma().user.update({
      where: { id: veteran.id },
      data: { dateJoined: new Date(Date.now() - 30 * 24 * 3600 * 1000) },
    });
    const full = await systemGroup(realm, 'role:fullmembers');
    const published = await captureEvents(realm.id, async () => {
      expectSuccess(await as(owner, host).patch('/realm', { waiting_period_threshold: 10 }));
    });
    expect(published.map((p) => p.event)).toContainEqual({
      type: 'user_group',
      op: 'remove_members',
      group_id: full,
      user_ids: [newcomer.id],
    });
    const members = await prisma().userGroupMembership.findMany({
      where: { userGroupId: full },
      select: { userId: true },
    });
    expect(members.map((m) => m.userId)).toEqual([veteran.id]);
    // A member who joins during a waiting period is not a full member yet.
    const latecomer = await createTestUser(realm, Role.MEMBER);
    expect(
      await prisma().userGroupMembership.count({
        where: { userGroupId: full, userId: latecomer.id },
      }),
    ).toBe(0);
    expectSuccess(await as(owner, host).patch('/realm', { waiting_period_threshold: 0 }));
    expect(
      await prisma().userGroupMembership.count({
        where: { userGroupId: full, userId: newcomer.id },
      }),
    ).toBe(1);
  });
});

describe('PATCH /realm: bad input', () => {
  let org: TestRealm;
  beforeAll(async () => {
    org = await createTestRealm();
  });

  const BAD_VALUE = 'REQUEST_VARIABLE_INVALID';
  const cases: [Record<string, unknown>, string, string?][] = [
    [{ name: 'x'.repeat(41) }, 'name is too long (limit: 40 characters)'],
    [{ description: 'x'.repeat(1001) }, 'description is too long (limit: 1000 characters)'],
    [
      { welcome_message_custom_text: 'x'.repeat(8001) },
      'welcome_message_custom_text is too long (limit: 8000 characters)',
    ],
    [{ allow_message_editing: 'maybe' }, 'allow_message_editing is not a boolean'],
    [
      { message_content_edit_limit_seconds: 0 },
      "Bad value for 'message_content_edit_limit_seconds': 0",
      BAD_VALUE,
    ],
    [
      { message_content_delete_limit_seconds: 'forever' },
      "Bad value for 'message_content_delete_limit_seconds': forever",
      BAD_VALUE,
    ],
    [
      { move_messages_within_stream_limit_seconds: -5 },
      "Bad value for 'move_messages_within_stream_limit_seconds': -5",
      BAD_VALUE,
    ],
    [
      { move_messages_between_streams_limit_seconds: 1.5 },
      'Invalid move_messages_between_streams_limit_seconds',
    ],
    [
      { message_edit_history_visibility_policy: 'some' },
      'Invalid message_edit_history_visibility_policy',
    ],
    [{ invite_required: 3 }, 'invite_required is not a boolean'],
    [{ waiting_period_threshold: -1 }, 'waiting_period_threshold is too small'],
    [{ waiting_period_threshold: 'soon' }, 'waiting_period_threshold is not an integer'],
    [{ waiting_period_threshold: 2 ** 31 - 1 }, 'waiting_period_threshold is too large'],
    [{ default_language: 'xx' }, "Invalid language 'xx'"],
    [{ topics_policy: 'inherit' }, 'Invalid topics_policy'],
    [{ mandatory_topics: 'yes' }, 'mandatory_topics is not a boolean'],
    [{ message_retention_days: 0 }, "Bad value for 'message_retention_days': 0", BAD_VALUE],
    [
      { message_retention_days: 'never' },
      "Bad value for 'message_retention_days': never",
      BAD_VALUE,
    ],
    [{ giphy_rating: 9 }, 'Invalid giphy_rating 9'],
    [{ org_type: 15 }, 'Invalid org_type'],
    [{ digest_weekday: 7 }, 'Invalid digest_weekday'],
    [{ inline_image_preview: 'no' }, 'inline_image_preview is not a boolean'],
    [
      { authentication_methods: { GitHub: true } },
      "Invalid authentication method: GitHub. Valid methods are: ['Email']",
    ],
    [
      { authentication_methods: { Email: false } },
      'At least one authentication method must be enabled.',
    ],
    [{ enable_spectator_access: 'on' }, 'enable_spectator_access is not a boolean'],
    [{ video_chat_provider: 3 }, 'Invalid video_chat_provider 3'],
    [{ jitsi_server_url: 'not a url' }, 'jitsi_server_url is not an allowed_type'],
    [
      { jitsi_server_url: `https://example.com/${'x'.repeat(200)}` },
      'jitsi_server_url is not an allowed_type',
    ],
    [{ can_add_custom_emoji_group: 5 }, 'can_add_custom_emoji_group is not a dict'],
    [
      { can_add_custom_emoji_group: { old: 1 } },
      "can_add_custom_emoji_group['new'] field is missing",
    ],
    [
      { can_add_custom_emoji_group: { new: 'admins' } },
      "Invalid can_add_custom_emoji_group['new']",
    ],
    [{ can_add_custom_emoji_group: { new: 999999999 } }, 'Invalid user group'],
  ];

  it.each(cases)('refuses %j', async (form, msg, code = 'BAD_REQUEST') => {
    const before = await realmRow(org.realm);
    const res = await patchRealm(org.owner, org, form);
    expectError(res, msg, 400, code);
    if (code === BAD_VALUE) {
      const [name, value] = Object.entries(form)[0]!;
      expect(res.body).toMatchObject({ var_name: name, bad_value: value });
    }
    expect(await realmRow(org.realm)).toEqual(before);
  });

  it('turns password login back on through authentication_methods', async () => {
    const { realm, owner, host } = await createTestRealm();
    await prisma().realm.update({ where: { id: realm.id }, data: { passwordAuthEnabled: false } });
    let res: Response | undefined;
    const published = await captureEvents(realm.id, async () => {
      res = await as(owner, host).patch('/realm', { authentication_methods: { Email: true } });
    });
    expect(expectSuccess(res!)).toEqual({
      result: 'success',
      msg: '',
      authentication_methods: { Email: true },
    });
    expect(published.map((p) => p.event)).toEqual([
      {
        type: 'realm',
        op: 'update_dict',
        property: 'default',
        data: { authentication_methods: { Email: { enabled: true, available: true } } },
      },
    ]);
    expect((await realmRow(realm)).passwordAuthEnabled).toBe(true);
    expect((await registerState(owner, host)).realm_authentication_methods).toEqual({
      Email: { enabled: true, available: true },
    });
  });

  it('takes a blank name, as Zulip does (only the length is checked)', async () => {
    const { realm, owner, host } = await createTestRealm();
    expect(expectSuccess(await as(owner, host).patch('/realm', { name: '' }))).toEqual({
      result: 'success',
      msg: '',
      name: 'updated',
    });
    expect((await realmRow(realm)).name).toBe('');
  });

  it('changes nothing when one of several settings is bad', async () => {
    const before = await realmRow(org.realm);
    expectError(
      await patchRealm(org.owner, org, { name: 'Fine', default_language: 'zz' }),
      "Invalid language 'zz'",
    );
    expectError(
      await patchRealm(org.owner, org, {
        name: 'Fine',
        can_mention_many_users_group: { new: 999999999 },
      }),
      'Invalid user group',
    );
    expect(await realmRow(org.realm)).toEqual(before);
  });
});

describe('PATCH /realm: group settings', () => {
  let org: TestRealm;
  let admin: User;
  let member: User;
  beforeAll(async () => {
    org = await createTestRealm();
    admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    member = await createTestUser(org.realm, Role.MEMBER);
  });

  it('stores every group setting, with Zulip defaults at creation', async () => {
    const realm = await realmRow(org.realm);
    for (const [setting, column] of Object.entries(REALM_GROUP_COLUMNS)) {
      const expected = await systemGroup(
        realm,
        REALM_PERMISSION_SETTINGS[setting as keyof typeof REALM_PERMISSION_SETTINGS].default,
      );
      expect([setting, realm[column]]).toEqual([setting, expected]);
    }
    const state = await registerState(member, org.host, ['realm']);
    for (const setting of Object.keys(REALM_GROUP_COLUMNS))
      expect(typeof state[`realm_${setting}`]).toBe('number');
  });

  it.each(Object.keys(REALM_PERMISSION_SETTINGS))(
    'changes %s with {new, old} and sends an update_dict event',
    async (setting) => {
      const spec = REALM_PERMISSION_SETTINGS[setting as keyof typeof REALM_PERMISSION_SETTINGS];
      const choices = spec.allowedSystemGroups ?? ['role:moderators', 'role:administrators'];
      const current = (await registerState(member, org.host, ['realm']))[
        `realm_${setting}`
      ] as number;
      const currentName = (await prisma().userGroup.findUniqueOrThrow({ where: { id: current } }))
        .name;
      const target = await systemGroup(
        org.realm,
        choices.find((name) => name !== currentName)!,
      );
      let res: Response | undefined;
      const published = await captureEvents(org.realm.id, async () => {
        res = await patchRealm(org.owner, org, { [setting]: { new: target, old: current } });
      });
      expect(expectSuccess(res!)).toEqual({ result: 'success', msg: '', [setting]: target });
      expect(published).toEqual([
        {
          event: {
            type: 'realm',
            op: 'update_dict',
            property: 'default',
            data: { [setting]: target },
          },
          users: await activeUserIds(org.realm),
        },
      ]);
      expect((await registerState(member, org.host, ['realm']))[`realm_${setting}`]).toBe(target);
      const audit = await prisma().auditLog.findFirstOrThrow({
        where: { realmId: org.realm.id, eventType: 207 },
        orderBy: { id: 'desc' },
      });
      expect(audit.extraData).toEqual({ old_value: current, new_value: target, property: setting });
    },
  );

  it('accepts anonymous groups and shows them in /register and the event', async () => {
    const moderators = await systemGroup(org.realm, 'role:moderators');
    const value = { direct_members: [member.id], direct_subgroups: [moderators] };
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await patchRealm(org.owner, org, { can_mention_many_users_group: { new: value } }),
      );
    });
    expect(published.map((p) => p.event)).toEqual([
      {
        type: 'realm',
        op: 'update_dict',
        property: 'default',
        data: { can_mention_many_users_group: value },
      },
    ]);
    expect(
      (await registerState(member, org.host, ['realm'])).realm_can_mention_many_users_group,
    ).toEqual(value);
    // The same members in another order is no change; "old" compares as sets too.
    const again = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await patchRealm(org.owner, org, {
          can_mention_many_users_group: {
            new: { direct_members: [member.id], direct_subgroups: [moderators] },
            old: { direct_subgroups: [moderators], direct_members: [member.id] },
          },
        }),
      );
    });
    expect(again).toEqual([]);
    // A single subgroup is that group; an empty group is "nobody".
    expectSuccess(
      await patchRealm(org.owner, org, {
        can_mention_many_users_group: {
          new: { direct_members: [], direct_subgroups: [moderators] },
        },
      }),
    );
    expect((await realmRow(org.realm)).canMentionManyUsersGroupId).toBe(moderators);
    expectSuccess(
      await patchRealm(org.owner, org, {
        can_mention_many_users_group: { new: { direct_members: [], direct_subgroups: [] } },
      }),
    );
    expect((await realmRow(org.realm)).canMentionManyUsersGroupId).toBe(
      await systemGroup(org.realm, 'role:nobody'),
    );
  });

  const refusals: [string, (realm: Realm) => Promise<unknown>, string][] = [
    [
      'an "old" value that is not the current one',
      async (realm) => ({
        can_add_custom_emoji_group: {
          new: await systemGroup(realm, 'role:moderators'),
          old: await systemGroup(realm, 'role:owners'),
        },
      }),
      "'old' value does not match the expected value.",
    ],
    [
      'nobody where the setting does not allow it',
      async (realm) => ({
        can_manage_all_groups: { new: await systemGroup(realm, 'role:nobody') },
      }),
      "'can_manage_all_groups' setting cannot be set to 'role:nobody' group.",
    ],
    [
      'an empty group where nobody is not allowed',
      async () => ({
        can_manage_billing_group: { new: { direct_members: [], direct_subgroups: [] } },
      }),
      "'can_manage_billing_group' setting cannot be set to 'role:nobody' group.",
    ],
    [
      'everyone where the setting does not allow it',
      async (realm) => ({
        can_add_custom_emoji_group: { new: await systemGroup(realm, 'role:everyone') },
      }),
      "'can_add_custom_emoji_group' setting cannot be set to 'role:everyone' group.",
    ],
    [
      'everyone on the internet',
      async (realm) => ({
        can_resolve_topics_group: { new: await systemGroup(realm, 'role:internet') },
      }),
      "'can_resolve_topics_group' setting cannot be set to 'role:internet' group.",
    ],
    [
      'an anonymous group where a system group is required',
      async () => ({
        can_access_all_users_group: { new: { direct_members: [1], direct_subgroups: [] } },
      }),
      "'can_access_all_users_group' must be a system user group.",
    ],
    [
      'a system group the setting does not allow',
      async (realm) => ({
        can_create_web_public_channel_group: { new: await systemGroup(realm, 'role:members') },
      }),
      "'can_create_web_public_channel_group' setting cannot be set to 'role:members' group.",
    ],
    [
      'a user of another organization',
      async () => ({
        can_delete_any_message_group: {
          new: { direct_members: [(await createTestRealm()).owner.id], direct_subgroups: [] },
        },
      }),
      'Invalid user ID',
    ],
    [
      'a group of another organization',
      async () => ({
        can_delete_any_message_group: {
          new: await systemGroup((await createTestRealm()).realm, 'role:members'),
        },
      }),
      'Invalid user group',
    ],
  ];

  it.each(refusals)('refuses %s', async (_name, form, msg) => {
    const before = await realmRow(org.realm);
    const res = await patchRealm(
      org.owner,
      org,
      (await form(org.realm)) as Record<string, unknown>,
    );
    expect(res.body.msg).toContain(msg);
    const stale = msg.startsWith("'old' value");
    const systemOnly = msg.endsWith('must be a system user group.');
    expectError(
      res,
      res.body.msg as string,
      400,
      stale ? 'EXPECTATION_MISMATCH' : systemOnly ? 'SYSTEM_GROUP_REQUIRED' : 'BAD_REQUEST',
    );
    // Zulip's error fields: which expectation failed, which setting needs a system group.
    if (stale) expect(res.body.field_name).toBe('old');
    if (systemOnly) expect(res.body.setting_name).toBe('can_access_all_users_group');
    expect(await realmRow(org.realm)).toEqual(before);
  });

  it('takes a null "old" as no expectation, and an empty group as nobody where only system groups may be', async () => {
    const admins = await systemGroup(org.realm, 'role:administrators');
    expectSuccess(
      await patchRealm(org.owner, org, { can_add_custom_emoji_group: { new: admins, old: null } }),
    );
    expect((await realmRow(org.realm)).canAddCustomEmojiGroupId).toBe(admins);
    expectSuccess(
      await patchRealm(org.owner, org, {
        can_create_web_public_channel_group: { new: { direct_members: [], direct_subgroups: [] } },
      }),
    );
    expect((await realmRow(org.realm)).canCreateWebPublicChannelGroupId).toBe(
      await systemGroup(org.realm, 'role:nobody'),
    );
  });

  it('lets only owners change the owner-only settings', async () => {
    const owners = await systemGroup(org.realm, 'role:owners');
    const admins = await systemGroup(org.realm, 'role:administrators');
    for (const form of [
      { invite_required: false },
      { emails_restricted_to_domains: true },
      { disallow_disposable_email_addresses: false },
      { waiting_period_threshold: 7 },
      { message_retention_days: 10 },
      // Before the value is looked at, as in Zulip.
      { message_retention_days: 'x' },
      { waiting_period_threshold: 7, message_content_edit_limit_seconds: 0 },
      { authentication_methods: { Email: true } },
      { create_multiuse_invite_group: { new: owners } },
      { can_create_groups: { new: admins } },
      { can_invite_users_group: { new: admins } },
      { can_manage_all_groups: { new: admins } },
      { can_manage_billing_group: { new: owners } },
    ])
      expectError(
        await patchRealm(admin, org, form),
        'Must be an organization owner',
        400,
        'UNAUTHORIZED_PRINCIPAL',
      );
    // Administrators may change the rest.
    expectSuccess(
      await patchRealm(admin, org, {
        name: 'Admin Named',
        can_delete_any_message_group: { new: owners },
        can_create_web_public_channel_group: { new: admins },
      }),
    );
  });

  it('refuses members, guests and bots', async () => {
    expectError(
      await patchRealm(member, org, { name: 'Nope' }),
      'Must be an organization administrator',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
  });
});

describe('GET /server_settings and /register after a change', () => {
  it('shows the new name, description and spectator access at once', async () => {
    const org = await createTestRealm('Before');
    expectSuccess(
      await as(org.owner, org.host, { atOnce: true }).patch('/realm', {
        name: 'After',
        description: 'Now *with* a description',
        enable_spectator_access: true,
      }),
    );
    const body = expectSuccess(await api.get(org.host, '/server_settings'));
    expect(body).toMatchObject({
      realm_name: 'After',
      realm_description: '<p>Now <em>with</em> a description</p>',
      // Zulip's allow_web_public_streams_access: no web-public channel, nothing to read.
      realm_web_public_access_enabled: false,
    });
    const channel = await createChannel(org.realm, org.owner, 'open', [org.owner]);
    await getPrisma().stream.update({ where: { id: channel.id }, data: { isWebPublic: true } });
    expect(
      expectSuccess(await api.get(org.host, '/server_settings')).realm_web_public_access_enabled,
    ).toBe(true);
  });

  it('recomputes the permission flags under realm_user', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm, Role.MEMBER);
    let state = await registerState(member, org.host);
    expect(state).toMatchObject({
      can_create_public_streams: true,
      can_create_private_streams: true,
      can_create_streams: true,
      can_invite_others_to_realm: true,
      can_subscribe_other_users: true,
    });
    const admins = await systemGroup(org.realm, 'role:administrators');
    expectSuccess(
      await patchRealm(org.owner, org, {
        can_create_public_channel_group: { new: admins },
        can_create_private_channel_group: { new: admins },
        can_invite_users_group: { new: admins },
        can_add_subscribers_group: { new: admins },
      }),
    );
    state = await registerState(member, org.host);
    expect(state).toMatchObject({
      can_create_public_streams: false,
      can_create_private_streams: false,
      can_create_streams: false,
      can_invite_others_to_realm: false,
      can_subscribe_other_users: false,
      realm_create_public_stream_policy: 2,
    });
  });

  it('folds raced realm events into the state (applyEvent)', () => {
    const state: Record<string, unknown> = {
      realm_name: 'Old',
      realm_allow_message_editing: true,
      realm_message_edit_history_visibility_policy: 'all',
      realm_allow_edit_history: true,
      realm_topics_policy: 'allow_empty_topic',
      realm_mandatory_topics: false,
    };
    const options = {} as Parameters<typeof applyEvent>[3];
    const user = {} as User;
    applyEvent(
      state,
      { id: 1, type: 'realm', op: 'update', property: 'name', value: 'New' },
      user,
      options,
    );
    applyEvent(
      state,
      {
        id: 2,
        type: 'realm',
        op: 'update_dict',
        property: 'default',
        data: { allow_message_editing: false },
      },
      user,
      options,
    );
    applyEvent(
      state,
      {
        id: 3,
        type: 'realm',
        op: 'update',
        property: 'message_edit_history_visibility_policy',
        value: 'none',
      },
      user,
      options,
    );
    applyEvent(
      state,
      {
        id: 4,
        type: 'realm',
        op: 'update_dict',
        property: 'default',
        data: { topics_policy: 'disable_empty_topic', mandatory_topics: true },
      },
      user,
      options,
    );
    expect(state).toEqual({
      realm_name: 'New',
      realm_allow_message_editing: false,
      realm_message_edit_history_visibility_policy: 'none',
      realm_allow_edit_history: false,
      realm_topics_policy: 'disable_empty_topic',
      realm_mandatory_topics: true,
    });
  });
});

describe('the stored settings decide permissions', () => {
  let org: MessageOrg;
  beforeEach(async () => {
    org = await createMessageOrg();
  });
  const post = async (user: User, topic: string, content: string) =>
    expectSuccess(await send(user, org.host, { type: 'stream', to: 'general', topic, content }))
      .id as number;

  it('turning off message editing takes effect on the very next request', async () => {
    const id = await post(org.member, 'edits', 'draft');
    expectSuccess(
      await as(org.owner, org.host, { atOnce: true }).patch('/realm', {
        allow_message_editing: false,
      }),
    );
    expectError(
      await as(org.member, org.host, { atOnce: true }).patch(`/messages/${id}`, {
        content: 'changed',
      }),
      'Your organization has turned off message editing',
    );
    // So does a group setting (the cached row carries every new column).
    expectSuccess(
      await as(org.owner, org.host, { atOnce: true }).patch('/realm', {
        can_delete_own_message_group: {
          new: await systemGroup(org.realm, 'role:administrators'),
        },
      }),
    );
    expectError(
      await as(org.member, org.host, { atOnce: true }).delete(`/messages/${id}`),
      "You don't have permission to delete this message",
    );
  });

  it('message_content_edit_limit_seconds "unlimited" allows editing old messages', async () => {
    const id = await post(org.member, 'old', 'draft');
    await prisma().message.update({
      where: { id },
      data: { dateSent: new Date(Date.now() - 3600 * 1000) },
    });
    expectError(
      await as(org.member, org.host).patch(`/messages/${id}`, { content: 'late' }),
      'The time limit for editing this message has passed',
    );
    expectSuccess(
      await patchRealm(org.owner, org, { message_content_edit_limit_seconds: 'unlimited' }),
    );
    expectSuccess(await as(org.member, org.host).patch(`/messages/${id}`, { content: 'late' }));
  });

  it('can_delete_any_message_group and can_delete_own_message_group', async () => {
    const mine = await post(org.member, 'deleting', 'mine');
    const others = await post(org.other, 'deleting', 'theirs');
    const moderator = await createTestUser(org.realm, Role.MODERATOR);
    expectError(
      await as(moderator, org.host).delete(`/messages/${others}`),
      "You don't have permission to delete this message",
    );
    await setGroup(org, 'can_delete_any_message_group', 'role:moderators');
    expectSuccess(await as(moderator, org.host).delete(`/messages/${others}`));
    await setGroup(org, 'can_delete_own_message_group', 'role:administrators');
    expectError(
      await as(org.member, org.host).delete(`/messages/${mine}`),
      "You don't have permission to delete this message",
    );
  });

  it('can_move_messages_between_topics_group, can_resolve_topics_group and the move limit', async () => {
    const id = await post(org.member, 'topic a', 'hello');
    expectSuccess(await as(org.member, org.host).patch(`/messages/${id}`, { topic: 'topic b' }));
    await setGroup(org, 'can_move_messages_between_topics_group', 'role:administrators');
    expectError(
      await as(org.member, org.host).patch(`/messages/${id}`, { topic: 'topic c' }),
      "You don't have permission to edit this message",
    );
    // Resolving is its own permission.
    expectSuccess(await as(org.member, org.host).patch(`/messages/${id}`, { topic: '✔ topic b' }));
    await setGroup(org, 'can_resolve_topics_group', 'role:nobody');
    expectError(
      await as(org.member, org.host).patch(`/messages/${id}`, { topic: 'topic b' }),
      "You don't have permission to resolve topics in this channel.",
    );
    // The time limit for moving within a channel.
    await setGroup(org, 'can_move_messages_between_topics_group', 'role:members');
    await prisma().message.update({
      where: { id },
      data: { dateSent: new Date(Date.now() - 2 * 3600 * 1000) },
    });
    expectSuccess(
      await patchRealm(org.owner, org, { move_messages_within_stream_limit_seconds: 3600 }),
    );
    expectError(
      await as(org.member, org.host).patch(`/messages/${id}`, { topic: 'topic d' }),
      "The time limit for editing this message's topic has passed.",
    );
    expectSuccess(
      await patchRealm(org.owner, org, { move_messages_within_stream_limit_seconds: 'unlimited' }),
    );
    expectSuccess(await as(org.member, org.host).patch(`/messages/${id}`, { topic: 'topic d' }));
  });

  it('can_move_messages_between_channels_group', async () => {
    expectSuccess(
      await as(org.owner, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'elsewhere' }],
        principals: [org.member.id],
      }),
    );
    const elsewhere = await prisma().stream.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'elsewhere' },
    });
    const id = await post(org.member, 'moving', 'hello');
    await setGroup(org, 'can_move_messages_between_channels_group', 'role:administrators');
    expectError(
      await as(org.member, org.host).patch(`/messages/${id}`, { stream_id: elsewhere.id }),
      "You don't have permission to move this message",
    );
    await setGroup(org, 'can_move_messages_between_channels_group', 'role:members');
    expectSuccess(
      await as(org.member, org.host).patch(`/messages/${id}`, { stream_id: elsewhere.id }),
    );
  });

  it('can_mention_many_users_group', async () => {
    const extra = await Promise.all(
      Array.from({ length: 13 }, () => createTestUser(org.realm, Role.MEMBER)),
    );
    expectSuccess(
      await as(org.owner, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'general' }],
        principals: extra.map((u) => u.id),
      }),
    );
    const form = { type: 'stream', to: 'general', topic: 'all', content: 'hi @**all**' };
    expectError(
      await send(org.member, org.host, form),
      'You do not have permission to use channel wildcard mentions in this channel.',
      400,
      'STREAM_WILDCARD_MENTION_NOT_ALLOWED',
    );
    await setGroup(org, 'can_mention_many_users_group', 'role:members');
    expectSuccess(await send(org.member, org.host, form));
  });

  it("can_mention_many_users_group for @**topic**: the topic's posters, reactors and sender", async () => {
    const posters = await Promise.all(
      Array.from({ length: 13 }, () => createTestUser(org.realm, Role.MEMBER)),
    );
    expectSuccess(
      await as(org.owner, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'general' }],
        principals: posters.map((u) => u.id),
      }),
    );
    let first = 0;
    for (const poster of posters) {
      const sent = expectSuccess(
        await send(poster, org.host, {
          type: 'stream',
          to: 'general',
          topic: 'many',
          content: 'me',
        }),
      );
      first ||= sent.id as number;
    }
    const react = (user: User) =>
      as(user, org.host).post(`/messages/${first}/reactions`, { emoji_name: 'wave' });
    const form = { type: 'stream', to: 'general', topic: 'many', content: 'hi @**topic**' };
    // 13 posters, a reactor and the sender: 15, the most Zulip allows.
    expectSuccess(await react(org.other));
    expectSuccess(await send(org.member, org.host, form));
    expectSuccess(await react(org.owner));
    expectError(
      await send(org.member, org.host, form),
      'You do not have permission to use topic wildcard mentions in this topic.',
      400,
      'TOPIC_WILDCARD_MENTION_NOT_ALLOWED',
    );
  });

  it('direct_message_permission_group and direct_message_initiator_group', async () => {
    const dm = (from: User, to: User) =>
      send(from, org.host, { type: 'private', to: JSON.stringify([to.id]), content: 'hi' });
    await setGroup(org, 'direct_message_permission_group', 'role:nobody');
    expectError(
      await dm(org.member, org.other),
      'Direct messages are disabled in this organization.',
    );
    await setGroup(org, 'direct_message_permission_group', 'role:administrators');
    expectError(
      await dm(org.member, org.other),
      'This conversation does not include any users who can authorize it.',
    );
    expectSuccess(await dm(org.member, org.admin));
    await setGroup(org, 'direct_message_permission_group', 'role:everyone');
    await setGroup(org, 'direct_message_initiator_group', 'role:administrators');
    expectError(
      await dm(org.member, org.other),
      'You do not have permission to initiate direct message conversations.',
    );
    // Replies to an existing conversation are fine.
    expectSuccess(await dm(org.admin, org.other));
    expectSuccess(await dm(org.other, org.admin));
    // A group conversation too: the first message starts it, replies do not.
    const group = (from: User, to: User[]) =>
      send(from, org.host, {
        type: 'private',
        to: JSON.stringify(to.map((user) => user.id)),
        content: 'hi all',
      });
    expectError(
      await group(org.member, [org.other, org.owner]),
      'You do not have permission to initiate direct message conversations.',
    );
    expectSuccess(await group(org.admin, [org.member, org.other]));
    expectSuccess(await group(org.member, [org.other, org.admin]));
    // Bots are never limited (Zulip's check_can_send_direct_message).
    await setGroup(org, 'direct_message_permission_group', 'role:administrators');
    const created = expectSuccess(
      await as(org.member, org.host).post('/bots', {
        full_name: 'DM bot',
        short_name: `dm${Date.now()}`,
      }),
    );
    const bot = await getPrisma().user.findUniqueOrThrow({
      where: { id: created.user_id as number },
    });
    expectSuccess(await group(bot, [org.other, org.owner]));
    await setGroup(org, 'direct_message_permission_group', 'role:everyone');
  });

  it('can_create_bots_group and can_create_write_only_bots_group', async () => {
    await setGroup(org, 'can_create_bots_group', 'role:administrators');
    await setGroup(org, 'can_create_write_only_bots_group', 'role:administrators');
    expectError(
      await as(org.member, org.host).post('/bots', { full_name: 'B', short_name: 'b1' }),
      'Insufficient permission',
    );
    await setGroup(org, 'can_create_write_only_bots_group', 'role:members');
    expectError(
      await as(org.member, org.host).post('/bots', { full_name: 'B', short_name: 'b2' }),
      'Insufficient permission',
    );
    expectSuccess(
      await as(org.member, org.host).post('/bots', {
        full_name: 'Hook',
        short_name: 'hook',
        bot_type: 2,
      }),
    );
  });

  it('can_set_topics_policy_group and can_set_delete_message_policy_group', async () => {
    const patchChannel = (user: User, form: Record<string, unknown>) =>
      as(user, org.host).patch(`/streams/${org.general.id}`, form);
    await setGroup(org, 'can_set_topics_policy_group', 'role:owners');
    expectError(
      await patchChannel(org.admin, { topics_policy: 'disable_empty_topic' }),
      'Insufficient permission',
    );
    expectSuccess(await patchChannel(org.owner, { topics_policy: 'disable_empty_topic' }));
    const members = await systemGroup(org.realm, 'role:members');
    expectSuccess(
      await patchChannel(org.admin, { can_delete_own_message_group: { new: members } }),
    );
    await setGroup(org, 'can_set_delete_message_policy_group', 'role:owners');
    expectError(
      await patchChannel(org.admin, {
        can_delete_own_message_group: { new: await systemGroup(org.realm, 'role:moderators') },
      }),
      'Insufficient permission',
    );
  });

  it("name_changes_disabled leaves members' names alone", async () => {
    expectSuccess(await patchRealm(org.owner, org, { name_changes_disabled: true }));
    expectSuccess(await as(org.member, org.host).patch('/settings', { full_name: 'New Mia' }));
    expect((await prisma().user.findUniqueOrThrow({ where: { id: org.member.id } })).fullName).toBe(
      'Mia Member',
    );
    expectSuccess(await as(org.admin, org.host).patch('/settings', { full_name: 'New Ada' }));
    expect((await prisma().user.findUniqueOrThrow({ where: { id: org.admin.id } })).fullName).toBe(
      'New Ada',
    );
  });

  it('require_unique_names refuses a name another user has', async () => {
    expectSuccess(await as(org.member, org.host).patch('/settings', { full_name: 'otto other' }));
    expectSuccess(await patchRealm(org.owner, org, { require_unique_names: true }));
    expectError(
      await as(org.member, org.host).patch('/settings', { full_name: 'Ada Admin' }),
      'Unique names required in this organization.',
    );
    expectSuccess(await as(org.member, org.host).patch('/settings', { full_name: 'Mia Unique' }));
  });

  it('can_add_custom_emoji_group', async () => {
    await setGroup(org, 'can_add_custom_emoji_group', 'role:administrators');
    const upload = (user: User, name: string) =>
      api
        .post(org.host, `/realm/emoji/${name}`)
        .auth(user.deliveryEmail, user.apiKey)
        .attach('file', png(16, 16), `${name}.png`);
    expectError(await upload(org.member, 'nope'), 'Insufficient permission');
    expectSuccess(await upload(org.admin, 'yes'));
  });
});

// ---- Permission matrix ----------------------------------------------------------------------

/** Refusals for want of a role come as UNAUTHORIZED_PRINCIPAL ("Must be an organization
 * administrator/owner"); the matrix expects Zulip's generic wording, so this checks the role's
 * message and then stands it in. */
function roleRequired(
  owner: boolean,
  run: (ctx: MatrixContext, actor: User, target: User) => Promise<Response>,
): Operation['run'] {
  return async (ctx, actor, target) => {
    const res = await run(ctx, actor, target);
    if (res.body.result === 'error') {
      expect(res.body.code).toBe('UNAUTHORIZED_PRINCIPAL');
      expect(res.body.msg).toBe(
        actor.role <= Role.ADMINISTRATOR && owner
          ? 'Must be an organization owner'
          : 'Must be an organization administrator',
      );
      res.body.code = 'BAD_REQUEST';
      res.body.msg = 'Insufficient permission';
    }
    return res;
  };
}

const matrixOperations: Operation[] = [
  {
    name: 'rename the organization',
    allowed: ['owner', 'admin'],
    run: roleRequired(false, ({ org }, actor, target) =>
      as(actor, org.host).patch('/realm', { name: `Org ${target.id}` }),
    ),
  },
  {
    name: 'change the message edit limit',
    allowed: ['owner', 'admin'],
    run: roleRequired(false, ({ org }, actor, target) =>
      as(actor, org.host).patch('/realm', { message_content_edit_limit_seconds: target.id }),
    ),
  },
  {
    name: 'change who may delete any message',
    allowed: ['owner', 'admin'],
    run: roleRequired(false, ({ org }, actor, target) =>
      as(actor, org.host).patch('/realm', {
        can_delete_any_message_group: {
          new: { direct_members: [target.id], direct_subgroups: [] },
        },
      }),
    ),
  },
  {
    name: 'change the waiting period',
    allowed: ['owner'],
    run: roleRequired(true, ({ org }, actor, target) =>
      as(actor, org.host).patch('/realm', { waiting_period_threshold: target.id % 1000 }),
    ),
  },
  {
    name: 'change message retention',
    allowed: ['owner'],
    run: roleRequired(true, ({ org }, actor, target) =>
      as(actor, org.host).patch('/realm', { message_retention_days: target.id }),
    ),
  },
  {
    name: 'change who may invite',
    allowed: ['owner'],
    run: roleRequired(true, ({ org }, actor, target) =>
      as(actor, org.host).patch('/realm', {
        can_invite_users_group: { new: { direct_members: [target.id], direct_subgroups: [] } },
      }),
    ),
  },
];

permissionMatrix('permission matrix: organization settings', matrixOperations, {
  snapshot: async ({ org }) => realmRow(org.realm),
});

describe('POST /realm/test_welcome_bot_custom_message', () => {
  it('has the Welcome Bot send the text to the administrator trying it', async () => {
    const org = await createTestRealm();
    const res = await as(org.owner, org.host).post('/realm/test_welcome_bot_custom_message', {
      welcome_message_custom_text: '  Welcome to **the team**!  ',
    });
    const { message_id: messageId } = expectSuccess(res);
    const message = await prisma().message.findUniqueOrThrow({
      where: { id: messageId as number },
      include: { sender: true },
    });
    const copies = await prisma().userMessage.findMany({ where: { messageId: message.id } });
    expect(message.content).toBe('Welcome to **the team**!');
    expect(message.sender).toMatchObject({ fullName: 'Welcome Bot', isBot: true });
    expect(copies.map((um) => um.userId)).toContain(org.owner.id);
  });

  it('refuses empty and over-long texts, and anyone but administrators', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm, Role.MEMBER);
    const path = '/realm/test_welcome_bot_custom_message';
    expectError(
      await as(org.owner, org.host).post(path, { welcome_message_custom_text: '   ' }),
      'Message must not be empty',
    );
    expectError(
      await as(org.owner, org.host).post(path, { welcome_message_custom_text: 'x'.repeat(8001) }),
      'welcome_message_custom_text is too long (limit: 8000 characters)',
    );
    expectError(
      await as(org.owner, org.host).post(path),
      "Missing 'welcome_message_custom_text' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(
      await as(member, org.host).post(path, { welcome_message_custom_text: 'hi' }),
      'Must be an organization administrator',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
  });
});

describe("PATCH /realm: the organization's special channels", () => {
  const settings = [
    'new_stream_announcements_stream_id',
    'signup_announcements_stream_id',
    'zulip_update_announcements_stream_id',
    'moderation_request_channel_id',
  ] as const;

  it('sets each, tells everyone, shows it in /register, and -1 turns it off', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm, Role.MEMBER);
    const everyone = await activeUserIds(org.realm);
    const open = await createChannel(org.realm, org.owner, 'announce', [org.owner]);
    // Administrators may name a private channel they are not subscribed to.
    const secret = await createChannel(org.realm, member, 'moderators', [member], {
      inviteOnly: true,
      historyPublicToSubscribers: false,
    });
    for (const setting of settings) {
      const id = setting === 'moderation_request_channel_id' ? secret.id : open.id;
      let res: Response | undefined;
      const published = await captureEvents(org.realm.id, async () => {
        res = await patchRealm(org.owner, org, { [setting]: id });
      });
      expect(expectSuccess(res!)).toEqual({ result: 'success', msg: '', [setting]: id });
      expect(published).toEqual([
        { event: { type: 'realm', op: 'update', property: setting, value: id }, users: everyone },
      ]);
      expect((await registerState(member, org.host))[`realm_${setting}`]).toBe(id);
      // The same value again changes nothing.
      const again = await captureEvents(org.realm.id, async () => {
        expectSuccess(await patchRealm(org.owner, org, { [setting]: id }));
      });
      expect(again).toEqual([]);
    }
    const audit = await prisma().auditLog.findMany({
      where: { realmId: org.realm.id, eventType: 207 },
      orderBy: { id: 'asc' },
    });
    expect(audit.map((row) => row.extraData)).toEqual([
      { old_value: null, new_value: open.id, property: 'new_stream_announcements_stream' },
      { old_value: null, new_value: open.id, property: 'signup_announcements_stream' },
      { old_value: null, new_value: open.id, property: 'zulip_update_announcements_stream' },
      { old_value: null, new_value: secret.id, property: 'moderation_request_channel' },
    ]);

    const published = await captureEvents(org.realm.id, async () => {
      expect(
        expectSuccess(await patchRealm(org.owner, org, { signup_announcements_stream_id: -1 })),
      ).toEqual({ result: 'success', msg: '', signup_announcements_stream_id: -1 });
    });
    expect(published.map((p) => p.event)).toEqual([
      { type: 'realm', op: 'update', property: 'signup_announcements_stream_id', value: -1 },
    ]);
    expect((await realmRow(org.realm)).signupAnnouncementsStreamId).toBeNull();
    expect((await registerState(member, org.host)).realm_signup_announcements_stream_id).toBe(-1);
  });

  it('refuses unknown, archived and other organizations’ channels, and a public moderation channel', async () => {
    const org = await createTestRealm();
    const other = await createTestRealm();
    const theirs = await createChannel(other.realm, other.owner, 'theirs', [other.owner]);
    const archived = await createChannel(org.realm, org.owner, 'old', [org.owner]);
    expectSuccess(await as(org.owner, org.host).delete(`/streams/${archived.id}`));
    const open = await createChannel(org.realm, org.owner, 'open', [org.owner]);
    const before = await realmRow(org.realm);
    for (const setting of settings) {
      for (const id of [999_999_999, theirs.id, archived.id])
        expectError(await patchRealm(org.owner, org, { [setting]: id }), 'Invalid channel ID');
      expectError(
        await patchRealm(org.owner, org, { [setting]: 'general' }),
        `${setting} is not an integer`,
      );
    }
    expectError(
      await patchRealm(org.owner, org, { moderation_request_channel_id: open.id }),
      'Moderation request channel must be private.',
    );
    // Nothing else in the request is changed either.
    expectError(
      await patchRealm(org.owner, org, { name: 'Renamed', signup_announcements_stream_id: 0 }),
      'Invalid channel ID',
    );
    expect(await realmRow(org.realm)).toEqual(before);
    const member = await createTestUser(org.realm, Role.MEMBER);
    expectError(
      await patchRealm(member, org, { signup_announcements_stream_id: open.id }),
      'Must be an organization administrator',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
  });

  it('archiving a channel clears it from every setting; the moderation channel stays private', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm, Role.MEMBER);
    const open = await createChannel(org.realm, org.owner, 'announce', [org.owner]);
    const moderation = await createChannel(org.realm, org.owner, 'moderation', [org.owner], {
      inviteOnly: true,
    });
    expectSuccess(
      await patchRealm(org.owner, org, {
        new_stream_announcements_stream_id: open.id,
        signup_announcements_stream_id: open.id,
        moderation_request_channel_id: moderation.id,
      }),
    );
    expectError(
      await as(org.owner, org.host).patch(`/streams/${moderation.id}`, { is_private: false }),
      'Moderation request channel must be private.',
    );

    // Everyone active when it was archived (the archival notice then adds the Notification Bot).
    const everyone = await activeUserIds(org.realm);
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(org.owner, org.host).delete(`/streams/${open.id}`));
    });
    expect(published.filter((p) => p.event.type === 'realm')).toEqual([
      {
        event: {
          type: 'realm',
          op: 'update_dict',
          property: 'default',
          data: { new_stream_announcements_stream_id: -1, signup_announcements_stream_id: -1 },
        },
        users: everyone,
      },
    ]);
    const state = await registerState(member, org.host);
    expect(state.realm_new_stream_announcements_stream_id).toBe(-1);
    expect(state.realm_signup_announcements_stream_id).toBe(-1);
    expect(state.realm_moderation_request_channel_id).toBe(moderation.id);
    expect(await realmRow(org.realm)).toMatchObject({
      newStreamAnnouncementsStreamId: null,
      signupAnnouncementsStreamId: null,
      moderationRequestChannelId: moderation.id,
    });
  });
});
