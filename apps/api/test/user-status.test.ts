// Statuses (Zulip's user_status): POST /users/me/status, GET and POST /users/{id}/status,
// /register's user_status and the user_status events, with Zulip's checks and who hears what.
import { getPrisma, Role, type Realm, type User } from '@parley/db';
import { applyUserStatusEvent } from '../src/lib/user-status';
import { as, captureEvents, createTestUser, expectError, expectSuccess } from './helpers';
import { createMessageOrg, type MessageOrg } from './message-helpers';

const prisma = () => getPrisma();

describe('statuses', () => {
  let org: MessageOrg;
  let bot: User;
  beforeAll(async () => {
    org = await createMessageOrg();
    bot = await prisma().user.update({
      where: { id: (await createTestUser(org.realm, Role.MEMBER)).id },
      data: { isBot: true, botType: 1, botOwnerId: org.member.id },
    });
  });

  const setStatus = (user: User, form: Record<string, unknown>) =>
    as(user, org.host).post('/users/me/status', form);
  const statusOf = async (viewer: User, target: User) =>
    expectSuccess(await as(viewer, org.host).get(`/users/${target.id}/status`)).status;
  const registered = async (viewer: User) =>
    expectSuccess(
      await as(viewer, org.host, { atOnce: true }).post('/register', {
        fetch_event_types: ['user_status'],
      }),
    ).user_status as Record<string, unknown>;
  const activeIds = async (realm: Pick<Realm, 'id'>) =>
    (
      await prisma().user.findMany({
        where: { realmId: realm.id, isActive: true },
        select: { id: true },
        orderBy: { id: 'asc' },
      })
    ).map((user) => user.id);

  it('sets text and emoji, tells everyone, and shows them in /register and GET', async () => {
    expect(await statusOf(org.other, org.member)).toEqual({});
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await setStatus(org.member, { status_text: '  in a meeting ', emoji_name: 'car' }),
      );
    });
    expect(published).toEqual([
      {
        event: {
          type: 'user_status',
          user_id: org.member.id,
          status_text: 'in a meeting',
          emoji_name: 'car',
          emoji_code: '1f697',
          reaction_type: 'unicode_emoji',
        },
        users: await activeIds(org.realm),
      },
    ]);
    const status = {
      status_text: 'in a meeting',
      emoji_name: 'car',
      emoji_code: '1f697',
      reaction_type: 'unicode_emoji',
    };
    expect(await statusOf(org.other, org.member)).toEqual(status);
    expect((await registered(org.other))[String(org.member.id)]).toEqual(status);

    // Only what is named changes: the text alone keeps the emoji.
    const textOnly = await captureEvents(org.realm.id, async () => {
      expectSuccess(await setStatus(org.member, { status_text: 'lunch' }));
    });
    expect(textOnly.map((p) => p.event)).toEqual([
      { type: 'user_status', user_id: org.member.id, status_text: 'lunch' },
    ]);
    expect(await statusOf(org.other, org.member)).toEqual({ ...status, status_text: 'lunch' });

    // Empty values clear; a status with nothing set is not listed.
    expectSuccess(await setStatus(org.member, { status_text: '', emoji_name: '' }));
    expect(await statusOf(org.other, org.member)).toEqual({});
    expect(await registered(org.other)).not.toHaveProperty(String(org.member.id));
    // zulip-flutter clears the emoji with all three fields empty (reaction_type too).
    expectSuccess(
      await setStatus(org.member, {
        status_text: 'back soon',
        emoji_name: 'car',
        reaction_type: 'unicode_emoji',
      }),
    );
    expectSuccess(
      await setStatus(org.member, { emoji_name: '', emoji_code: '', reaction_type: '' }),
    );
    expect(await statusOf(org.other, org.member)).toEqual({ status_text: 'back soon' });
  });

  it('takes away as presence turned off, and Zulip’s custom and extra emoji', async () => {
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await setStatus(org.other, { away: true }));
    });
    expect(published.map((p) => p.event)).toContainEqual({
      type: 'user_status',
      user_id: org.other.id,
      away: true,
    });
    expect(published.map((p) => p.event)).toContainEqual(
      expect.objectContaining({
        type: 'user_settings',
        property: 'presence_enabled',
        value: false,
      }),
    );
    expect(
      (await prisma().user.findUniqueOrThrow({ where: { id: org.other.id } })).presenceEnabled,
    ).toBe(false);
    expect(await statusOf(org.member, org.other)).toEqual({ away: true });
    expectSuccess(await setStatus(org.other, { away: false, emoji_name: 'zulip' }));
    expect(await statusOf(org.member, org.other)).toEqual({
      emoji_name: 'zulip',
      emoji_code: 'zulip',
      reaction_type: 'zulip_extra_emoji',
    });
    const emoji = await prisma().realmEmoji.create({
      data: {
        realmId: org.realm.id,
        name: 'parrot',
        fileName: 'parrot.png',
        authorId: org.owner.id,
      },
    });
    expectSuccess(await setStatus(org.other, { emoji_name: 'parrot' }));
    expect(await statusOf(org.member, org.other)).toEqual({
      emoji_name: 'parrot',
      emoji_code: String(emoji.id),
      reaction_type: 'realm_emoji',
    });
  });

  it('refuses what Zulip refuses', async () => {
    const before = await statusOf(org.owner, org.admin);
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'Client did not pass any new values.'],
      [{ status_text: 'x'.repeat(61) }, 'status_text is too long (limit: 60 characters)'],
      [
        { status_text: 'In a meeting', emoji_code: '1f4bb' },
        'Client must pass emoji_name if they pass either emoji_code or reaction_type.',
      ],
      [{ emoji_name: 'invalid', emoji_code: '1f4bb' }, "Emoji 'invalid' does not exist"],
      [{ emoji_name: 'car', emoji_code: '1f4bb' }, 'Invalid emoji name.'],
      [
        { emoji_name: 'car', emoji_code: '1f4bb', reaction_type: 'realm_emoji' },
        'Invalid custom emoji.',
      ],
      [{ emoji_name: 'car', reaction_type: 'emoji' }, 'Invalid emoji type.'],
      [{ away: 'sometimes' }, 'away is not a boolean'],
      [{ status_text: 'a\u0000b' }, 'Invalid status_text: null bytes are not allowed'],
    ];
    for (const [form, msg] of cases) expectError(await setStatus(org.admin, form), msg);
    // Nothing refused changed anything.
    expect(await statusOf(org.owner, org.admin)).toEqual(before);
    expectSuccess(await setStatus(org.admin, { status_text: ` ${'x'.repeat(60)} ` }));
    expect(await statusOf(org.owner, org.admin)).toEqual({ status_text: 'x'.repeat(60) });
    // An empty code or type counts as not passed (Zulip tests them for truth).
    expectSuccess(
      await setStatus(org.admin, { status_text: 'y', emoji_code: '', reaction_type: '' }),
    );
    expect(await statusOf(org.owner, org.admin)).toEqual({ status_text: 'y' });
    expectError(
      await setStatus(bot, { status_text: 'beep' }),
      'This endpoint does not accept bot requests.',
    );
    expectError(await as(org.member, org.host).get('/users/999999999/status'), 'No such user');
    expectError(await as(org.member, org.host).get(`/users/${bot.id}/status`), 'No such user');
    const gone = await createTestUser(org.realm, Role.MEMBER);
    expectSuccess(await as(org.owner, org.host).delete(`/users/${gone.id}`));
    expectError(
      await as(org.member, org.host).get(`/users/${gone.id}/status`),
      'User is deactivated',
    );
  });

  it('lets administrators set the status of those they administer', async () => {
    expectError(
      await as(org.member, org.host).post(`/users/${org.other.id}/status`, { status_text: 'x' }),
      'Insufficient permission',
    );
    // Administrators may set an owner's status too (Zulip's can_admin_user).
    expectSuccess(
      await as(org.admin, org.host).post(`/users/${org.owner.id}/status`, { status_text: 'x' }),
    );
    expect(await statusOf(org.member, org.owner)).toEqual({ status_text: 'x' });
    // A bot with the administrator role may too (update_user_status_admin takes bots).
    const adminBot = await prisma().user.update({
      where: { id: (await createTestUser(org.realm, Role.ADMINISTRATOR)).id },
      data: { isBot: true, botType: 1, botOwnerId: org.admin.id },
    });
    expectSuccess(
      await as(adminBot, org.host).post(`/users/${org.other.id}/status`, {
        status_text: 'set by a bot',
      }),
    );
    expect(await statusOf(org.member, org.other)).toMatchObject({ status_text: 'set by a bot' });
    // Zulip's order: a bot is no such user, even to someone who could not administer it.
    expectError(
      await as(org.other, org.host).post(`/users/${bot.id}/status`, { status_text: 'x' }),
      'No such user',
    );
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(org.admin, org.host).post(`/users/${org.guest.id}/status`, {
          status_text: 'visiting',
        }),
      );
    });
    expect(published.map((p) => p.event)).toEqual([
      { type: 'user_status', user_id: org.guest.id, status_text: 'visiting' },
    ]);
    expect(await statusOf(org.member, org.guest)).toEqual({ status_text: 'visiting' });
  });

  it('keeps statuses from guests who may not see the person', async () => {
    expectSuccess(
      await as(org.owner, org.host).patch('/realm', {
        can_access_all_users_group: {
          new: (
            await prisma().userGroup.findFirstOrThrow({
              where: { realmId: org.realm.id, name: 'role:members' },
            })
          ).id,
        },
      }),
    );
    // The administrator shares no channel with the guest.
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await setStatus(org.admin, { status_text: 'reviewing' }));
    });
    expect(published[0]!.users).not.toContain(org.guest.id);
    expect(published[0]!.users).toContain(org.member.id);
    expect(await registered(org.guest)).not.toHaveProperty(String(org.admin.id));
    expect(await registered(org.member)).toHaveProperty(String(org.admin.id));
    expectError(
      await as(org.guest, org.host).get(`/users/${org.admin.id}/status`),
      'Insufficient permission',
    );
  });

  it('folds raced events into a /register state as Zulip’s apply_event does', () => {
    const state: Record<string, unknown> = { user_status: { '7': { status_text: 'old' } } };
    applyUserStatusEvent(state, {
      type: 'user_status',
      user_id: 7,
      away: true,
      emoji_name: 'car',
      emoji_code: '1f697',
      reaction_type: 'unicode_emoji',
    });
    expect(state.user_status).toEqual({
      '7': {
        status_text: 'old',
        away: true,
        emoji_name: 'car',
        emoji_code: '1f697',
        reaction_type: 'unicode_emoji',
      },
    });
    applyUserStatusEvent(state, {
      type: 'user_status',
      user_id: 7,
      away: false,
      status_text: '',
      emoji_name: '',
      emoji_code: '',
      reaction_type: 'unicode_emoji',
    });
    expect(state.user_status).toEqual({});
  });
});
